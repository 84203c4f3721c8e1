// The records component.js hands the bindings (kit/wit.js), natively.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import * as kit from '../index.js';
import { contentBlock, descriptor, failure, witContext } from '../wit.js';

const base = {
  description: 'd',
  inputSchema: kit.objectSchema({ p: { type: 'string' } }),
  outputSchema: {},
  execute: () => ({}),
};

test('the descriptor carries every field, hostRenders included', () => {
  const tool = new kit.Tool({
    ...base,
    name: 'full',
    title: 'Full',
    annotations: { readOnly: true },
    paths: [{ pointer: '/p', access: 'write' }],
    urls: ['/u'],
    render: () => undefined,
  });
  assert.deepEqual(descriptor(tool), {
    name: 'full',
    description: 'd',
    inputSchema: JSON.stringify(base.inputSchema),
    outputSchema: '{}',
    annotations: { readOnly: true, destructive: false, idempotent: false, openWorld: false },
    paths: [{ pointer: '/p', access: 'write' }],
    title: 'Full',
    urls: ['/u'],
    hostRenders: false,
  });
  const plain = descriptor(new kit.Tool({ ...base, name: 'plain', hostRenders: true }));
  assert.equal(plain.hostRenders, true);
  assert.equal(plain.title, undefined);
});

test('every content block converts to its WIT variant', () => {
  assert.deepEqual(contentBlock(kit.text('t')), { tag: 'text', val: 't' });
  assert.deepEqual(contentBlock(kit.image('aW1n', 'image/png')), {
    tag: 'image',
    val: { data: 'aW1n', mimeType: 'image/png' },
  });
  assert.deepEqual(contentBlock(kit.resourceLink({ uri: 'file:///a', name: 'a' })), {
    tag: 'resource-link',
    val: { uri: 'file:///a', name: 'a', mimeType: undefined, description: undefined },
  });
  assert.deepEqual(contentBlock(kit.audio('UklGRg==', 'audio/wav')), {
    tag: 'audio',
    val: { data: 'UklGRg==', mimeType: 'audio/wav' },
  });
  assert.deepEqual(contentBlock(kit.resource({ uri: 'file:///a.md', mimeType: 'text/markdown', text: '# A' })), {
    tag: 'embedded-resource',
    val: { uri: 'file:///a.md', mimeType: 'text/markdown', contents: { tag: 'text', val: '# A' } },
  });
  assert.deepEqual(contentBlock(kit.resource({ uri: 'file:///a.bin', blob: 'AAE=' })), {
    tag: 'embedded-resource',
    val: { uri: 'file:///a.bin', mimeType: undefined, contents: { tag: 'blob', val: 'AAE=' } },
  });
  // MCP-shaped literals work as well as the helpers' blocks.
  assert.deepEqual(contentBlock({ type: 'resource', resource: { uri: 'x:/y', text: '' } }), {
    tag: 'embedded-resource',
    val: { uri: 'x:/y', mimeType: undefined, contents: { tag: 'text', val: '' } },
  });
  assert.throws(() => contentBlock({ type: 'resource', resource: { uri: 'x:/y' } }), /text or a blob/);
  assert.throws(() => contentBlock({ type: 'video' }), /not a content block/);
});

test('failures carry their info as JSON', () => {
  assert.deepEqual(failure(new kit.ToolError('not_found', 'gone', { tried: 1 })), {
    code: 'not_found',
    message: 'gone',
    info: '{"tried":1}',
  });
  assert.equal(failure(new kit.ToolError('x', 'y', { n: NaN })).info, undefined);
});

test('the context backend hands the import u64s as BigInts', () => {
  const calls = [];
  const backend = witContext({
    progress: (...a) => calls.push(['progress', ...a]),
    log: (...a) => calls.push(['log', ...a]),
    cancelled: () => true,
  });
  kit.setContextBackend(backend);
  try {
    kit.ctx().progress(1, { total: 2, message: 'half' });
    kit.ctx().progress(3n);
    kit.ctx().log('critical', 'c');
    assert.equal(kit.ctx().cancelled(), true);
  } finally {
    kit.setContextBackend(undefined);
  }
  assert.deepEqual(calls, [
    ['progress', 1n, 2n, 'half'],
    ['progress', 3n, undefined, undefined],
    ['log', 'critical', 'c'],
  ]);
  assert.deepEqual(kit.takeReports(), []);
});
