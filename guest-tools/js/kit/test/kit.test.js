import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';

import * as kit from '../index.js';
import { call, checkSchemas, OutputInvalid, textOf, workspace } from '../testing.js';

const ECHO = new kit.Tool({
  name: 'echo',
  description: 'Echoes its text.',
  inputSchema: kit.objectSchema({ text: { type: 'string' } }, ['text']),
  outputSchema: kit.objectSchema({ text: { type: 'string' } }, ['text']),
  execute: (args) => ({ text: args.text }),
  render: (args, value) => [kit.text(`echo: ${value.text}`)],
});

const FAILING = new kit.Tool({
  name: 'failing',
  description: 'Fails in the way its argument says.',
  inputSchema: kit.objectSchema({ how: { enum: ['tool_error', 'bug', 'nan', 'string', 'bad_output'] } }, ['how']),
  outputSchema: kit.objectSchema({ n: { type: 'number' } }, ['n']),
  execute(args) {
    switch (args.how) {
      case 'tool_error':
        throw new kit.ToolError('not_found', 'no such thing', { tried: 1 });
      case 'bug':
        return null.x;
      case 'nan':
        return { n: NaN };
      case 'string':
        throw 'a string';
      default:
        return { n: 'one' };
    }
  },
});

const TOOLSET = new kit.Toolset([ECHO, FAILING]);

test('a Tool checks its declaration', () => {
  const base = {
    name: 'ok',
    description: 'd',
    inputSchema: kit.objectSchema({}),
    outputSchema: {},
    execute: () => ({}),
  };
  assert.doesNotThrow(() => new kit.Tool(base));
  assert.throws(() => new kit.Tool({ ...base, name: 'Bad-Name' }), /must match/);
  assert.throws(() => new kit.Tool({ ...base, name: 'x'.repeat(65) }), /must match/);
  assert.throws(() => new kit.Tool({ ...base, inputSchema: { type: 'string' } }), /describe an object/);
  assert.throws(() => new kit.Tool({ ...base, paths: [{ pointer: 'path', access: 'read' }] }), /start with/);
  assert.throws(() => new kit.Tool({ ...base, paths: [{ pointer: '/path', access: 'delete' }] }), /not one of/);
  assert.throws(() => new kit.Tool({ ...base, annotations: { readonly: true } }), /unknown annotation/);
  assert.throws(() => new kit.Tool({ ...base, urls: ['url'] }), /start with/);
  assert.throws(() => new kit.Toolset([ECHO, ECHO]), /duplicate tool name: echo/);
  assert.throws(() => new kit.ToolError('NotSnake', 'x'), /snake_case/);
});

test('new content blocks: audio and embedded resources', () => {
  assert.deepEqual(kit.audio('UklGRg==', 'audio/wav'), { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' });
  assert.deepEqual(kit.resource({ uri: 'file:///a.md', mimeType: 'text/markdown', text: '# A' }), {
    type: 'resource',
    resource: { uri: 'file:///a.md', mimeType: 'text/markdown', text: '# A' },
  });
  assert.deepEqual(kit.resource({ uri: 'file:///a.bin', blob: 'AAE=' }), {
    type: 'resource',
    resource: { uri: 'file:///a.bin', mimeType: undefined, blob: 'AAE=' },
  });
  assert.throws(() => kit.resource({ uri: 'x:/y' }), /exactly one of text and blob/);
  assert.throws(() => kit.resource({ uri: 'x:/y', text: 'a', blob: 'AA==' }), /exactly one of text and blob/);
});

test('hostRenders defaults to false and excludes a renderer', () => {
  const base = { description: 'd', inputSchema: kit.objectSchema({}), outputSchema: {}, execute: () => ({}) };
  assert.equal(ECHO.hostRenders, false);
  const plain = new kit.Tool({ ...base, name: 'plain', hostRenders: true });
  assert.equal(plain.hostRenders, true);
  assert.equal(new kit.Toolset([plain]).renderJson('plain', '{}', '{}'), undefined);
  assert.throws(() => new kit.Tool({ ...base, name: 'x', hostRenders: true, render: () => [] }), /has no render/);
  assert.throws(() => new kit.Tool({ ...base, name: 'x', hostRenders: 'yes' }), /must be a boolean/);
});

test('annotations default to false', () => {
  assert.deepEqual(ECHO.annotations, { readOnly: false, destructive: false, idempotent: false, openWorld: false });
});

test('executeJson dispatches and maps failures to codes', () => {
  assert.equal(TOOLSET.executeJson('echo', '{"text":"hi"}'), '{"text":"hi"}');
  const code = (name, args) => {
    try {
      TOOLSET.executeJson(name, args);
    } catch (err) {
      assert.ok(err instanceof kit.ToolError);
      return [err.code, err.message, err.info];
    }
    return undefined;
  };
  assert.deepEqual(code('nope', '{}')[0], 'unknown_tool');
  assert.deepEqual(code('echo', '{not json')[0], 'invalid_arguments');
  assert.deepEqual(code('echo', '[1]')[0], 'invalid_arguments');
  assert.deepEqual(code('failing', '{"how":"tool_error"}'), ['not_found', 'no such thing', { tried: 1 }]);
  const [bug, message] = code('failing', '{"how":"bug"}');
  assert.equal(bug, 'internal_error');
  assert.match(message, /^TypeError: /);
  assert.equal(code('failing', '{"how":"nan"}')[0], 'internal_error');
  assert.equal(code('failing', '{"how":"string"}')[0], 'internal_error');
});

test('renderJson renders, or leaves it to the host', () => {
  assert.deepEqual(TOOLSET.renderJson('echo', '{"text":"a"}', '{"text":"a"}'), [{ type: 'text', text: 'echo: a' }]);
  assert.equal(TOOLSET.renderJson('failing', '{}', '{"n":1}'), undefined); // no renderer
  assert.equal(TOOLSET.renderJson('nope', '{}', '{}'), undefined);
  assert.equal(TOOLSET.renderJson('echo', 'not json', '{}'), undefined);
});

test('testing.call checks both schemas, as the host does', () => {
  const { value, content } = call(TOOLSET, 'echo', { text: 'x' });
  assert.deepEqual(value, { text: 'x' });
  assert.equal(textOf(content), 'echo: x');
  assert.throws(() => call(TOOLSET, 'echo', { text: 1 }), (err) => err.code === 'invalid_arguments');
  assert.throws(() => call(TOOLSET, 'echo', { text: 'x', extra: 1 }), (err) => err.code === 'invalid_arguments');
  assert.throws(() => call(TOOLSET, 'failing', { how: 'bad_output' }), OutputInvalid);
  for (const tool of TOOLSET.tools) checkSchemas(tool);
});

test('dumps refuses what JSON cannot hold', () => {
  assert.equal(kit.dumps({ a: [1, 'é', null] }), '{"a":[1,"é",null]}');
  assert.throws(() => kit.dumps({ n: Infinity }), /JSON cannot represent/);
  assert.throws(() => kit.dumps({ n: 1n }), /BigInt/);
  assert.throws(() => kit.dumps(undefined), /not JSON-serializable/);
});

test('objectSchema closes objects and names the dialect', () => {
  assert.deepEqual(kit.objectSchema({ a: { type: 'string' } }, ['a']), {
    $schema: kit.SCHEMA_DIALECT,
    type: 'object',
    properties: { a: { type: 'string' } },
    required: ['a'],
    additionalProperties: false,
  });
  assert.equal(kit.objectSchema({}, [], { root: false }).$schema, undefined);
});

test('resolvePath resolves as the host does', () => {
  kit.setInitialCwdProvider(() => '/workspace');
  assert.equal(kit.resolvePath('a/b.md'), '/workspace/a/b.md');
  assert.equal(kit.resolvePath('./a/../b.md'), '/workspace/b.md');
  assert.equal(kit.resolvePath('../../../etc/passwd'), '/etc/passwd');
  assert.equal(kit.resolvePath('/x//y/'), '/x/y');
  assert.equal(kit.resolvePath('c.md', '/workspace/docs'), '/workspace/docs/c.md');
  assert.equal(kit.resolvePath('.'), '/workspace');
  kit.setInitialCwdProvider(() => undefined);
  assert.equal(kit.initialCwd(), '/');
  assert.equal(kit.resolvePath('a'), '/a');
  kit.setInitialCwdProvider(() => 'workspace');
  assert.equal(kit.initialCwd(), '/workspace');
  assert.equal(kit.dirname('/workspace/a.md'), '/workspace');
  assert.equal(kit.dirname('/a.md'), '/');
});

test('files: reading text, and every failure with its code', (t) => {
  workspace(t, {
    'a.md': '\ufeffhello\n',
    'dir/b.md': 'b',
    'bin.dat': 'x\u0000y',
    'big.md': 'x'.repeat(100),
  });
  assert.equal(kit.readTextFile('a.md'), 'hello\n'); // the BOM is dropped
  assert.equal(kit.readTextFile('/workspace/dir/b.md'), 'b');
  assert.equal(kit.readTextFile('big.md', { maxBytes: 100 }).length, 100);
  assert.equal(kit.statPath('dir').type, 'directory');
  assert.deepEqual(kit.statPath('a.md'), { path: '/workspace/a.md', type: 'file', size: 9 });
  const failure = (f) => {
    try {
      f();
    } catch (err) {
      assert.ok(err instanceof kit.FileError, String(err));
      return err.code;
    }
    return 'no failure';
  };
  assert.equal(failure(() => kit.readTextFile('missing.md')), 'not_found');
  assert.equal(failure(() => kit.readTextFile('dir')), 'is_directory');
  assert.equal(failure(() => kit.readTextFile('a.md/x')), 'not_a_directory');
  assert.equal(failure(() => kit.readTextFile('/etc/passwd')), 'not_granted');
  assert.equal(failure(() => kit.readTextFile('../outside.md')), 'not_granted');
  assert.equal(failure(() => kit.readTextFile('big.md', { maxBytes: 99 })), 'file_too_large');
  assert.equal(failure(() => kit.readTextFile('bin.dat')), 'binary_file');
  assert.equal(failure(() => kit.statPath('missing')), 'not_found');
});

test('files: invalid UTF-8 is not_utf8, and messages name the path as given', (t) => {
  const { dir } = workspace(t, {});
  writeFileSync(`${dir}/bad.md`, Buffer.from([0x61, 0x80])); // a lone continuation byte
  assert.throws(
    () => kit.readTextFile('bad.md'),
    (err) => err.code === 'not_utf8' && err.message === 'bad.md is not valid UTF-8 text',
  );
  assert.throws(() => kit.readTextFile('./nope.md'), (err) => err.message === './nope.md does not exist');
});
