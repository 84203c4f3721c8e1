// Tools and toolsets: declarations, dispatch by name, JSON in and out.

import { ToolError, asToolError } from './errors.js';

/** The JSON Schema dialect the host expects (draft 2020-12). */
export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** The WIT `path-access` cases. */
export const PATH_ACCESSES = Object.freeze(['read', 'list', 'create', 'overwrite', 'patch', 'write']);

// Tool names, as the contract requires: [a-z][a-z0-9_]*, at most 64 bytes.
const NAME_RE = /^[a-z][a-z0-9_]{0,63}$/;

/** A block of text for the model. */
export function text(value) {
  return { type: 'text', text: String(value) };
}

/** An image for the model: base64 data and its media type. */
export function image(data, mimeType) {
  return { type: 'image', data: String(data), mimeType: String(mimeType) };
}

/** A link to a resource the model can ask for separately. */
export function resourceLink({ uri, name, mimeType = undefined, description = undefined }) {
  return { type: 'resource_link', uri: String(uri), name: String(name), mimeType, description };
}

/** Audio for the model: base64 data and its media type (e.g. `audio/wav`). */
export function audio(data, mimeType) {
  return { type: 'audio', data: String(data), mimeType: String(mimeType) };
}

/**
 * A resource's contents, embedded in the result (the WIT
 * `embedded-resource`, shaped as MCP's): `text`, or `blob` (base64 of
 * binary content), exactly one of them; `mimeType` when known.
 */
export function resource({ uri, mimeType = undefined, text = undefined, blob = undefined }) {
  if ((text === undefined) === (blob === undefined)) {
    throw new TypeError(`resource ${JSON.stringify(uri)}: give exactly one of text and blob`);
  }
  const r = { uri: String(uri), mimeType: mimeType === undefined ? undefined : String(mimeType) };
  if (text !== undefined) r.text = String(text);
  else r.blob = String(blob);
  return { type: 'resource', resource: r };
}

const ANNOTATION_KEYS = ['readOnly', 'destructive', 'idempotent', 'openWorld'];

/**
 * One tool: its declaration and its functions.
 *
 * `inputSchema` and `outputSchema` are JSON Schemas (draft 2020-12) as
 * objects; the host validates the arguments against the first before
 * `execute` runs and the value against the second after. `render(args,
 * value)` returns content blocks, or `undefined` to let the host render; it
 * must be pure: it runs in a fresh instance that sees only the arguments and
 * the value.
 *
 * `hostRenders: true` says the tool renders nothing itself (it then has no
 * `render`): the host renders the value and never calls `render`, so a call
 * needs one instance instead of two under the default policy.
 */
export class Tool {
  constructor({
    name,
    description,
    inputSchema,
    outputSchema,
    execute,
    render = undefined,
    title = undefined,
    annotations = {},
    paths = [],
    urls = [],
    hostRenders = false,
  }) {
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw new TypeError(`tool name ${JSON.stringify(name)} must match [a-z][a-z0-9_]*, at most 64 bytes`);
    }
    if (typeof description !== 'string' || description === '') {
      throw new TypeError(`tool ${name}: a description is required`);
    }
    for (const [which, schema] of [['input', inputSchema], ['output', outputSchema]]) {
      if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
        throw new TypeError(`tool ${name}: the ${which} schema must be an object`);
      }
    }
    if (inputSchema.type !== 'object') {
      throw new TypeError(`tool ${name}: the input schema must describe an object`);
    }
    if (typeof execute !== 'function') {
      throw new TypeError(`tool ${name}: execute must be a function`);
    }
    if (render !== undefined && typeof render !== 'function') {
      throw new TypeError(`tool ${name}: render must be a function`);
    }
    if (typeof hostRenders !== 'boolean') {
      throw new TypeError(`tool ${name}: hostRenders must be a boolean`);
    }
    if (hostRenders && render !== undefined) {
      throw new TypeError(`tool ${name}: a tool with hostRenders has no render (the host never calls it)`);
    }
    for (const key of Object.keys(annotations)) {
      if (!ANNOTATION_KEYS.includes(key)) {
        throw new TypeError(`tool ${name}: unknown annotation ${key} (${ANNOTATION_KEYS.join(', ')})`);
      }
    }
    for (const p of paths) {
      if (typeof p.pointer !== 'string' || !p.pointer.startsWith('/')) {
        throw new TypeError(`tool ${name}: path pointer ${JSON.stringify(p.pointer)} must start with '/'`);
      }
      if (!PATH_ACCESSES.includes(p.access)) {
        throw new TypeError(`tool ${name}: path access ${JSON.stringify(p.access)} is not one of ${PATH_ACCESSES.join(', ')}`);
      }
    }
    for (const pointer of urls) {
      if (typeof pointer !== 'string' || !pointer.startsWith('/')) {
        throw new TypeError(`tool ${name}: URL pointer ${JSON.stringify(pointer)} must start with '/'`);
      }
    }
    this.name = name;
    this.description = description;
    this.title = title;
    this.inputSchema = inputSchema;
    this.outputSchema = outputSchema;
    this.execute = execute;
    this.render = render;
    this.annotations = Object.freeze({
      readOnly: Boolean(annotations.readOnly),
      destructive: Boolean(annotations.destructive),
      idempotent: Boolean(annotations.idempotent),
      openWorld: Boolean(annotations.openWorld),
    });
    this.paths = Object.freeze(paths.map((p) => Object.freeze({ pointer: p.pointer, access: p.access })));
    this.urls = Object.freeze([...urls]);
    this.hostRenders = hostRenders;
    Object.freeze(this);
  }
}

/**
 * The tools of one component, dispatched by name.
 *
 * This is what `component.js` exports; tests call `executeJson` and
 * `renderJson` directly, which run exactly the code the component runs.
 */
export class Toolset {
  constructor(tools) {
    this.byName = new Map();
    for (const t of tools) {
      if (!(t instanceof Tool)) throw new TypeError('a Toolset holds Tool instances');
      if (this.byName.has(t.name)) throw new TypeError(`duplicate tool name: ${t.name}`);
      this.byName.set(t.name, t);
    }
    Object.freeze(this);
  }

  /** The tools, in declaration order. */
  get tools() {
    return [...this.byName.values()];
  }

  /** Tool `name`; `unknown_tool` when there is none. */
  get(name) {
    const tool = this.byName.get(name);
    if (!tool) throw new ToolError('unknown_tool', `this component has no tool named ${JSON.stringify(name)}`);
    return tool;
  }

  /**
   * Runs tool `name` on an arguments JSON document and returns the value as
   * a JSON document.
   *
   * Throws `ToolError`: the tool's own, `unknown_tool`, `invalid_arguments`
   * when the arguments are not a JSON object, `internal_error` for any other
   * exception (a bug in the tool).
   */
  executeJson(name, argumentsJson) {
    const tool = this.get(name);
    const args = parseArguments(argumentsJson);
    try {
      return dumps(tool.execute(args));
    } catch (err) {
      throw asToolError(err);
    }
  }

  /**
   * Renders a value of tool `name`, both given as JSON documents.
   *
   * `undefined` (the host renders) when the tool has no renderer, the tool is
   * unknown, or either document does not decode. Exceptions from the
   * renderer propagate: they are bugs, and the host reports them as
   * `render_failed`.
   */
  renderJson(name, argumentsJson, valueJson) {
    const tool = this.byName.get(name);
    if (!tool || !tool.render) return undefined;
    let args;
    let value;
    try {
      args = JSON.parse(argumentsJson);
      value = JSON.parse(valueJson);
    } catch {
      return undefined;
    }
    if (!isPlainObject(args)) return undefined;
    return tool.render(args, value) ?? undefined;
  }
}

function parseArguments(argumentsJson) {
  let args;
  try {
    args = JSON.parse(argumentsJson);
  } catch (err) {
    throw ToolError.invalidArguments(`the arguments are not JSON: ${err.message}`);
  }
  if (!isPlainObject(args)) throw ToolError.invalidArguments('the arguments must be a JSON object');
  return args;
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * `value` as a compact JSON document. Values JSON cannot represent
 * (`undefined` at the top, NaN and infinities, BigInt) are refused: a value
 * holding one is a bug in the tool and ends as `internal_error`.
 */
export function dumps(value) {
  const text = JSON.stringify(value, (key, v) => {
    if (typeof v === 'number' && !Number.isFinite(v)) {
      throw new TypeError(`${key || 'the value'} is ${v}, which JSON cannot represent`);
    }
    if (typeof v === 'bigint') {
      throw new TypeError(`${key || 'the value'} is a BigInt, which JSON cannot represent`);
    }
    return v;
  });
  if (text === undefined) throw new TypeError('the value is not JSON-serializable');
  return text;
}

/**
 * A JSON Schema of an object with `properties`.
 *
 * `additionalProperties` is false unless `additional` is set, so the host
 * rejects misspelled arguments before the tool runs. `root` adds the
 * `$schema` dialect, for the top level of a tool's schema.
 */
export function objectSchema(properties, required = [], { description, additional = false, root = true, defs } = {}) {
  const schema = {};
  if (root) schema.$schema = SCHEMA_DIALECT;
  schema.type = 'object';
  if (description) schema.description = description;
  schema.properties = { ...properties };
  if (required.length) schema.required = [...required];
  schema.additionalProperties = additional;
  if (defs) schema.$defs = { ...defs };
  return schema;
}
