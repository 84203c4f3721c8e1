// The records of the contract (toolhost:tool@0.3.0) as the bindings
// componentize-js generates take them, built from the kit's values.
//
// Plain JavaScript (component.js, which imports the bindings, uses it), so
// the conversions are unit-tested natively. Conventions of the bindings
// (componentize-js 0.22): records are objects with camelCase fields,
// variants `{ tag: 'embedded-resource', val }`, enums their WIT names as
// strings, an `option` is the value or `undefined`, and `u64` a BigInt.

import { dumps } from './tool.js';

/** The `tool-descriptor` of `tool`. */
export function descriptor(tool) {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: JSON.stringify(tool.inputSchema),
    outputSchema: JSON.stringify(tool.outputSchema),
    annotations: { ...tool.annotations },
    paths: tool.paths.map((p) => ({ pointer: p.pointer, access: p.access })),
    title: tool.title,
    urls: [...tool.urls],
    hostRenders: Boolean(tool.hostRenders),
  };
}

/**
 * The `tool-failure` of a `ToolError`: a plain object, not an Error, as the
 * bindings take a thrown plain object as the `err` payload.
 */
export function failure(err) {
  let info;
  if (err.info !== undefined) {
    try {
      info = dumps(err.info);
    } catch {
      info = undefined;
    }
  }
  return { code: err.code, message: err.message, info };
}

/** The `content-block` of one of the kit's content blocks (kit/tool.js). */
export function contentBlock(block) {
  switch (block?.type) {
    case 'text':
      return { tag: 'text', val: block.text };
    case 'image':
      return { tag: 'image', val: { data: block.data, mimeType: block.mimeType } };
    case 'audio':
      return { tag: 'audio', val: { data: block.data, mimeType: block.mimeType } };
    case 'resource_link':
      return {
        tag: 'resource-link',
        val: { uri: block.uri, name: block.name, mimeType: block.mimeType, description: block.description },
      };
    case 'resource':
      return {
        tag: 'embedded-resource',
        val: { uri: block.resource?.uri, mimeType: block.resource?.mimeType, contents: resourceContents(block) },
      };
    default:
      throw new TypeError(`not a content block: ${JSON.stringify(block)}`);
  }
}

function resourceContents(block) {
  const r = block.resource;
  if (typeof r?.text === 'string') return { tag: 'text', val: r.text };
  if (typeof r?.blob === 'string') return { tag: 'blob', val: r.blob };
  throw new TypeError(`an embedded resource holds text or a blob: ${JSON.stringify(block)}`);
}

/**
 * The context backend (see context.js) over the `toolhost:tool/context`
 * import's functions `{ progress, log, cancelled }`.
 */
export function witContext({ progress, log, cancelled }) {
  return {
    progress: (done, total, message) =>
      progress(BigInt(done), total === undefined ? undefined : BigInt(total), message),
    log: (level, message) => log(level, message),
    cancelled: () => cancelled(),
  };
}
