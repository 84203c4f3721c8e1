// Native test helpers: run a tool the way the host runs it, under
// `node --test`.
//
// `call` checks the arguments against the tool's input schema (the host's
// `invalid_arguments`), runs `execute` through the same JSON dispatch the
// component uses, checks the value against the output schema (the host's
// `output_invalid`), then renders it. Schemas are checked with Ajv (draft
// 2020-12), pinned in ../package.json and installed by test.sh; it is found
// through $TOOLHOST_JS_NODE (the npm prefix test.sh installs into) or a
// node_modules above this file. Without it schema checks are skipped with a
// warning. `workspace` serves a temporary directory as `/workspace`, as a
// policy's grant would.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import * as kit from './index.js';
import { nodeFileSystem } from './node.js';

function loadAjv() {
  const bases = [];
  if (process.env.TOOLHOST_JS_NODE) bases.push(join(process.env.TOOLHOST_JS_NODE, 'package.json'));
  bases.push(import.meta.url);
  for (const base of bases) {
    try {
      const Ajv2020 = createRequire(base)('ajv/dist/2020');
      return Ajv2020.default ?? Ajv2020;
    } catch {
      // try the next place
    }
  }
  return undefined;
}

const Ajv2020 = loadAjv();
let warned = false;
const validators = new WeakMap();

function validator(schema) {
  if (!Ajv2020) {
    if (!warned) console.warn('kit/testing.js: ajv is not installed (run test.sh): schema checks skipped');
    warned = true;
    return undefined;
  }
  let v = validators.get(schema);
  if (!v) {
    // strict: unknown keywords and formats are errors, as typos should be.
    v = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    validators.set(schema, v);
  }
  return v;
}

/** The messages of `instance`'s violations of `schema`; empty when it conforms. */
export function validate(schema, instance) {
  const v = validator(schema);
  if (!v || v(instance)) return [];
  return v.errors.map((e) => `${e.instancePath || '(root)'}: ${e.message}`);
}

/** Throws when a schema of `tool` is not a valid draft 2020-12 schema. */
export function checkSchemas(tool) {
  validator(tool.inputSchema);
  validator(tool.outputSchema);
}

/** The value does not match the tool's output schema (the host's `output_invalid`). */
export class OutputInvalid extends Error {
  constructor(message) {
    super(message);
    this.name = 'OutputInvalid';
  }
}

/**
 * Runs tool `name` on `args` as the host would; returns `{ value, content }`
 * (`content` undefined: the host would render). Throws a `ToolError` for a
 * failure (`invalid_arguments` when the arguments violate the input schema)
 * and `OutputInvalid` when the value violates the output schema.
 */
export function call(toolset, name, args) {
  const tool = toolset.get(name);
  const errors = validate(tool.inputSchema, args);
  if (errors.length) throw kit.ToolError.invalidArguments(errors.join('; '));
  const argumentsJson = JSON.stringify(args);
  const valueJson = toolset.executeJson(name, argumentsJson);
  const value = JSON.parse(valueJson);
  const invalid = validate(tool.outputSchema, value);
  if (invalid.length) throw new OutputInvalid(`${name}: ${invalid.join('; ')}`);
  return { value, content: toolset.renderJson(name, argumentsJson, valueJson) };
}

/** The text blocks of `content`, joined by blank lines. */
export function textOf(content) {
  return (content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n\n');
}

/**
 * A temporary directory holding `files` (relative path -> text), served as
 * `guest` (default `/workspace`), which is also the initial working
 * directory. Removed when the test `t` ends (or call `dispose()`).
 */
export function workspace(t, files = {}, { guest = '/workspace' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-js-test-'));
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
  kit.setFileSystem(nodeFileSystem({ [guest]: dir }));
  kit.setInitialCwdProvider(() => guest);
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  t?.after?.(dispose);
  return { dir, guest, dispose };
}
