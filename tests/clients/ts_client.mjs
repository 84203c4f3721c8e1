#!/usr/bin/env node
// Drives `toolhost serve` with the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package-lock.json): one scenario per
// run, which asserts what it can see from the client side and prints one JSON
// line of facts for the caller (host/cli/tests/clients.rs) to check against
// the disk and the session log.
//
// Usage:
//   node ts_client.mjs --transport stdio --cmd '["toolhost","serve",...]' --cwd DIR SCENARIO [KEY=VALUE ...]
//   node ts_client.mjs --transport http --url http://127.0.0.1:PORT/mcp SCENARIO [KEY=VALUE ...]
//
// The SDK is loaded from the directory tests/clients/install.sh installs it
// in: $TOOLHOST_CLIENTS_DIR/node (default <repo root>/target/clients/node).
// Exits 0 after printing the facts; 1 with `ts_client: FAILED ...` on stderr
// when an expectation does not hold; 2 on a usage error.

import { createRequire } from 'node:module';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const clientsDir = process.env.TOOLHOST_CLIENTS_DIR || path.join(here, '..', '..', 'target', 'clients');
const require = createRequire(path.join(clientsDir, 'node', 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema, ToolListChangedNotificationSchema, McpError } = require('@modelcontextprotocol/sdk/types.js');
const SDK_VERSION = JSON.parse(
  readFileSync(path.join(clientsDir, 'node', 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'),
).version;

const SCENARIO_DEADLINE_MS = 90_000;
const NOTES = '/workspace/notes.txt';
const WRITTEN = 'written by the typescript client\n';

class Failure extends Error {}

// Ajv (the SDK's output-schema validator) warns on each schema `format` it
// does not know; collect those as a fact instead of printing them per tool.
const unknownFormats = new Set();
const warn = console.warn.bind(console);
console.warn = (...args) => {
  const m = /^unknown format "([^"]+)" ignored/.exec(String(args[0]));
  if (m) unknownFormats.add(m[1]);
  else warn(...args);
};

function expect(condition, message) {
  if (!condition) throw new Failure(message);
}

const facts = {};
// Problems that do not stop a scenario (so the rest of it still runs and
// reports), but fail it at the end.
const problems = [];

function textOf(result) {
  return (result.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

function describe(v) {
  return JSON.stringify(v)?.slice(0, 2000);
}

function parseArgs(argv) {
  const opts = { args: {} };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--transport' || a === '--cmd' || a === '--cwd' || a === '--url') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      opts[a.slice(2)] = argv[++i];
    } else if (a.startsWith('--')) {
      usage(`unknown option ${a}`);
    } else {
      rest.push(a);
    }
  }
  if (opts.transport !== 'stdio' && opts.transport !== 'http') usage('--transport stdio|http is required');
  if (opts.transport === 'stdio' && !opts.cmd) usage('--transport stdio needs --cmd');
  if (opts.transport === 'http' && !opts.url) usage('--transport http needs --url');
  opts.scenario = rest.shift();
  if (!SCENARIOS[opts.scenario]) usage(`unknown scenario ${opts.scenario}; one of ${Object.keys(SCENARIOS).join(', ')}`);
  for (const kv of rest) {
    const at = kv.indexOf('=');
    if (at < 0) usage(`scenario arguments are KEY=VALUE, got ${kv}`);
    opts.args[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return opts;
}

function usage(message) {
  process.stderr.write(`ts_client: ${message}\nusage: ts_client.mjs --transport stdio --cmd JSON --cwd DIR | --transport http --url URL SCENARIO [KEY=VALUE ...]\n`);
  process.exit(2);
}

/** A connected client. `elicit`: an answer function (declares the elicitation capability); `onRequest`: sees any other server request. */
async function connect(opts, { elicit, onListChanged, onRequest } = {}) {
  const capabilities = elicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: 'toolhost-ts-client', version: '0.0.0' }, { capabilities });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params));
  }
  if (onRequest) {
    client.fallbackRequestHandler = async (request) => onRequest(request);
  }
  if (onListChanged) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => onListChanged());
  }
  let transport;
  if (opts.transport === 'stdio') {
    const cmd = JSON.parse(opts.cmd);
    expect(Array.isArray(cmd) && cmd.length > 0, '--cmd must be a JSON list');
    const env = {};
    for (const k of ['TOOLHOST_LOG', 'RUST_BACKTRACE', 'RUST_LOG', 'TOOLHOST_SEARCH_MODEL']) if (process.env[k]) env[k] = process.env[k];
    transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), cwd: opts.cwd, env, stderr: 'inherit' });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(opts.url));
  }
  await client.connect(transport);
  // Keep what the server answered to each tools/call, to report it when the SDK rejects it.
  const called = new Map();
  const raw = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message?.method === 'tools/call') called.set(message.id, message.params?.name);
    return send(message, options);
  };
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message && called.has(message.id) && 'result' in message) raw.push({ name: called.get(message.id), result: message.result });
    deliver?.(message, extra);
  };
  client.raw = raw;
  if (transport.protocolVersion) facts.protocol_version ??= transport.protocolVersion;
  facts.server ??= client.getServerVersion()?.name;
  // The SDK validates structuredContent against the outputSchema of tools it has listed.
  await client.listTools();
  return client;
}

/** tools/call through the SDK's normal path (which validates structuredContent against the advertised outputSchema). */
async function call(client, name, args, options) {
  try {
    return await client.callTool({ name, arguments: args }, undefined, options);
  } catch (e) {
    if (e instanceof McpError && /output schema|structured content/i.test(e.message)) {
      // The SDK refused the server's result. Record it (the scenario fails),
      // and go on with what the server sent, so the rest is still checked.
      const last = client.raw.filter((m) => m.name === name).pop();
      const sent = last && { isError: last.result.isError, structuredContent: last.result.structuredContent, content: last.result.content };
      const why = sent?.isError
        ? ` (SDK ${SDK_VERSION} validates structuredContent against the outputSchema even on isError results, ` +
          'modelcontextprotocol/typescript-sdk#1943: an error result must not carry a structuredContent that does not fit the schema)'
        : '';
      problems.push(
        `tools/call ${name} ${describe(args)}: the SDK's callTool rejected the server's result: ${e.message}${why}; ` +
          `the server sent: ${describe(sent)}`,
      );
      expect(last, `no raw response recorded for tools/call ${name}`);
      return last.result;
    }
    throw e;
  }
}

function value(result, what) {
  expect(!result.isError, `${what}: expected success, got an error result: ${describe(result)}`);
  expect(result.structuredContent && typeof result.structuredContent === 'object' && !Array.isArray(result.structuredContent),
    `${what}: expected structuredContent to be an object: ${describe(result)}`);
  expect(textOf(result).length > 0, `${what}: expected rendered text content: ${describe(result)}`);
  return result.structuredContent;
}

// The error of a failed call: isError, the stable code in _meta.toolhost.error,
// and `Error [code]: ...` as the text. structuredContent is left out of error
// results (clients validate it against the tool's outputSchema); if a server
// sends it, it must carry the same code.
function error(result, code, what) {
  expect(result.isError === true, `${what}: expected an isError result with code ${code}, got: ${describe(result)}`);
  const e = result._meta?.toolhost?.error;
  expect(e && typeof e === 'object', `${what}: expected _meta.toolhost.error, got: ${describe(result)}`);
  expect(e.code === code, `${what}: expected code ${code}, got ${e.code}: ${describe(result)}`);
  expect(typeof e.message === 'string' && e.message, `${what}: no error message: ${describe(result)}`);
  expect(textOf(result).includes(`[${code}]`), `${what}: expected content text with [${code}], got ${describe(textOf(result))}`);
  const sc = result.structuredContent;
  if (sc !== undefined) {
    expect(sc?.error?.code === code, `${what}: structuredContent of an error result does not carry ${code}: ${describe(result)}`);
  }
  return { code: e.code, message: e.message, structured: sc !== undefined };
}

/** An elicitation answerer from a script, recording what it was asked. */
function elicitations(...answers) {
  const asked = [];
  const answer = async (params) => {
    asked.push({ mode: params.mode ?? 'form', message: params.message, requestedSchema: params.requestedSchema });
    return answers.shift() ?? { action: 'decline' };
  };
  answer.asked = asked;
  return answer;
}

async function names(client) {
  return (await client.listTools()).tools.map((t) => t.name);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Code mode's scripts (the served toolbox: the built-ins, `--mode code`),
// shared with py_client.py: `scripts/NAME.js`, or `NAME.py` when the
// scenario's `language=python` (the server's `--language python`).
const script = (name, language = 'javascript') =>
  readFileSync(path.join(here, 'scripts', `${name}.${language === 'python' ? 'py' : 'js'}`), 'utf8');

/** How code mode's declarations spell the tool `name`. */
const declared = (name, language) => (language === 'python' ? `async def ${name}(` : `function ${name}(`);

/** What a script returned: run_code's value is `{result, console}`. */
function scriptResult(result, what) {
  const v = value(result, what);
  expect(Object.keys(v).sort().join() === 'console,result', `${what}: not run_code's value: ${describe(v)}`);
  return v.result;
}

// --- scenarios ---------------------------------------------------------------

// The `integers` record of the plain test component (wit/test-plain).
const PLAIN_INTS = {
  a: 255, b: -128, c: 65535, d: -32768, e: 4294967295,
  f: -2147483648, g: '18446744073709551615', h: '-9223372036854775808',
};

const SCENARIOS = {
  // A first start with deferred tools: once `search_tools` is listed, a
  // search while the slow component still compiles either finds its tool or
  // names the component as still loading (never a silent miss); searched
  // again until nothing is loading, it finds the tool; then a search in other
  // words than a tool's own (paraphrase=...) is recorded. The SDK checks
  // every answer against search_tools' output schema.
  async cold_search(opts) {
    const { query = '', slow = '', paraphrase } = opts.args;
    const callArgs = JSON.parse(opts.args.args ?? '{}');
    let changes = 0;
    const c = await connect(opts, { onListChanged: () => { changes += 1; } });
    try {
      const listedBy = performance.now() + 120_000;
      while (!(await names(c)).includes('search_tools')) {
        expect(performance.now() < listedBy, 'search_tools was not listed within 120 s');
        const seen = changes;
        while (changes === seen && performance.now() < listedBy) await sleep(50);
      }
      const found = (v) => (v.tools ?? []).map((t) => t.name);
      const first = value(await call(c, 'search_tools', { query }), 'search_tools during the load');
      facts.first_found = found(first);
      facts.first_loading = first.loading ?? null;
      let again = first;
      let searches = 1;
      const settledBy = performance.now() + 180_000;
      while (again.loading) {
        expect(performance.now() < settledBy, 'components still loading after 180 s');
        await sleep(500);
        again = value(await call(c, 'search_tools', { query }), 'search_tools again');
        searches += 1;
      }
      facts.searches = searches;
      facts.settled_found = found(again);
      facts.slow_value = value(await call(c, slow, callArgs), `call ${slow}`);
      if (paraphrase) {
        facts.paraphrase_found = found(value(await call(c, 'search_tools', { query: paraphrase }), 'search_tools by meaning'));
      }
    } finally {
      await c.close();
    }
  },

  // A plain component's functions (wit/test-plain): the SDK parses the listing
  // (an outputSchema it keeps must describe an object), calls and errors.
  async plain(opts) {
    const c = await connect(opts);
    try {
      const tools = (await c.listTools()).tools;
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      for (const name of ['greet', 'integers', 'lookup_find', 'points', 'zero']) {
        expect(byName[name], `${name} is not listed: ${Object.keys(byName)}`);
      }
      expect(byName.greet.description === 'Greets someone by name.', `greet's description: ${describe(byName.greet.description)}`);
      const g = await call(c, 'greet', { name: 'Ana' });
      expect(!g.isError && textOf(g) === 'Hello, Ana!', `greet: ${describe(g)}`);
      facts.greet_output_schema = byName.greet.outputSchema ?? null;
      facts.integers_output_schema_type = byName.integers.outputSchema?.type ?? null;
      facts.integers = value(await call(c, 'integers', { v: PLAIN_INTS }), 'integers');
      facts.not_found = error(await call(c, 'lookup_find', { name: 'zzz' }), 'not_found', 'lookup_find of an unknown name');
      facts.tools = tools.map((t) => t.name);
    } finally {
      await c.close();
    }
  },

  async list(opts) {
    const expected = (opts.args.expect ?? '').split(',').filter(Boolean);
    const c = await connect(opts);
    try {
      const caps = c.getServerCapabilities();
      expect(caps?.tools, 'the server did not declare the tools capability');
      const tools = (await c.listTools()).tools;
      const got = tools.map((t) => t.name);
      expect(JSON.stringify(got) === JSON.stringify([...got].sort()), `tools are not sorted by name: ${got}`);
      if (expected.length) expect(JSON.stringify(got) === JSON.stringify([...expected].sort()), `expected exactly ${[...expected].sort()}, got ${got}`);
      for (const t of tools) {
        expect(t.inputSchema?.type === 'object', `${t.name}: inputSchema is not an object schema`);
        expect(t.outputSchema?.type === 'object', `${t.name}: no object outputSchema: ${describe(t.outputSchema)}`);
        expect(t.description, `${t.name}: no description`);
      }
      facts.tools = got;
      facts.required = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema.required ?? []]));
      facts.list_changed = Boolean(caps.tools.listChanged);
      facts.read_only = Object.fromEntries(tools.map((t) => [t.name, Boolean(t.annotations?.readOnlyHint)]));
    } finally {
      await c.close();
    }
  },

  async allowed(opts) {
    const c = await connect(opts);
    try {
      const readResult = await call(c, 'read', { path: NOTES });
      const read = value(readResult, 'read notes.txt');
      expect(textOf(readResult).includes('needle'), "read's text lacks the file");
      const window = value(await call(c, 'read', { path: 'notes.txt', offset: 2, limit: 1 }), 'read a window');
      const listing = value(await call(c, 'list', { path: '/workspace' }), 'list /workspace');
      const deep = value(await call(c, 'list', { path: '/workspace', recursive: true }), 'list recursively');
      const grep = value(await call(c, 'grep', { pattern: 'needle', path: '/workspace' }), 'grep needle');
      facts.read = { path: read.path, lines: read.lines, totalLines: read.totalLines, nextOffset: read.nextOffset };
      facts.window = { path: window.path, offset: window.offset, lines: window.lines, nextOffset: window.nextOffset };
      facts.list = listing.entries.map((e) => [e.path, e.type]);
      facts.list_recursive = deep.entries.map((e) => e.path);
      facts.grep = grep.matches.map((m) => [m.path, m.line, m.text]);
    } finally {
      await c.close();
    }
  },

  async errors(opts) {
    const c = await connect(opts);
    try {
      facts.missing = error(await call(c, 'read', { path: '/workspace/no-such-file.txt' }), 'not_found', 'read a missing file');
      facts.bad_type = error(await call(c, 'read', { path: 42 }), 'invalid_arguments', 'read with a number as path');
      facts.missing_argument = error(await call(c, 'grep', { path: '/workspace' }), 'invalid_arguments', 'grep without a pattern');
      facts.unknown = error(await call(c, 'no_such_tool', {}), 'unknown_tool', 'an unknown tool');
      value(await call(c, 'read', { path: NOTES }), 'read after errors');
    } finally {
      await c.close();
    }
  },

  async denied(opts) {
    const c = await connect(opts);
    try {
      facts.etc_passwd = error(await call(c, 'read', { path: '/etc/passwd' }), 'path_denied', 'read /etc/passwd');
      facts.dotdot = error(await call(c, 'read', { path: '/workspace/../../etc/passwd' }), 'path_denied', 'read through ..');
      facts.grep_etc = error(await call(c, 'grep', { pattern: 'root', path: '/etc' }), 'path_denied', 'grep /etc');
    } finally {
      await c.close();
    }
  },

  async ask_accept(opts) {
    // The write is accepted without touching the form, the edit with approve=true.
    const answers = elicitations({ action: 'accept' }, { action: 'accept', content: { approve: true } });
    const c = await connect(opts, { elicit: answers });
    let written;
    let edited;
    try {
      written = value(await call(c, 'write', { path: '/workspace/created.txt', content: WRITTEN }), 'write (accepted)');
      expect(written.created === true, `write did not report created: ${describe(written)}`);
      value(await call(c, 'read', { path: NOTES }), 'read before edit');
      edited = value(await call(c, 'edit', { path: NOTES, old_text: 'alpha line', new_text: 'ALPHA LINE' }), 'edit (accepted)');
      expect(edited.replacements === 1, `edit replaced ${edited.replacements} times`);
    } finally {
      await c.close();
    }
    const asked = answers.asked;
    expect(asked.length === 2, `expected 2 elicitations, got ${describe(asked)}`);
    ['/workspace/created.txt', NOTES].forEach((p, i) => {
      expect(asked[i].mode === 'form', `not a form elicitation: ${describe(asked[i])}`);
      expect(asked[i].message.includes(p), `the approval message does not name ${p}: ${describe(asked[i].message)}`);
      expect(asked[i].requestedSchema?.properties?.approve?.type === 'boolean', `no boolean approve field: ${describe(asked[i])}`);
    });
    facts.asked = asked.map((a) => a.message);
    facts.write = written;
    facts.edit = { path: edited.path, replacements: edited.replacements, added: edited.added, removed: edited.removed };
  },

  async ask_decline(opts) {
    const answers = elicitations({ action: 'decline' }, { action: 'cancel' }, { action: 'accept', content: { approve: false } });
    const c = await connect(opts, { elicit: answers });
    try {
      value(await call(c, 'read', { path: NOTES }), 'read before edit');
      const edit = { path: NOTES, old_text: 'alpha line', new_text: 'DECLINED' };
      facts.decline = error(await call(c, 'edit', edit), 'approval_denied', 'edit (declined)');
      facts.cancel = error(await call(c, 'write', { path: '/workspace/declined.txt', content: 'no\n' }), 'approval_denied', 'write (cancelled)');
      facts.unchecked = error(await call(c, 'edit', edit), 'approval_denied', 'edit (accepted with approve=false)');
    } finally {
      await c.close();
    }
    const asked = answers.asked;
    expect(asked.length === 3, `expected 3 elicitations, got ${describe(asked)}`);
    expect(asked[0].message.includes(NOTES), `the message does not name ${NOTES}: ${describe(asked[0])}`);
    expect(asked[1].message.includes('/workspace/declined.txt'), `the message does not name /workspace/declined.txt: ${describe(asked[1])}`);
    facts.asked = asked.map((a) => a.message);
  },

  // The user answers (accept) only after the server's approval timeout: the
  // call is denied, and the late answer does not disturb the session.
  async ask_timeout(opts) {
    const delay = Number(opts.args.delay ?? '4') * 1000;
    const asked = [];
    let answered;
    const done = new Promise((resolve) => { answered = resolve; });
    const c = await connect(opts, {
      elicit: async (params) => {
        asked.push(params.message);
        await sleep(delay);
        answered();
        return { action: 'accept', content: { approve: true } };
      },
    });
    try {
      const started = performance.now();
      facts.write = error(await call(c, 'write', { path: '/workspace/late.txt', content: 'too late\n' }), 'approval_denied', 'write answered after the approval timeout');
      facts.denied_after_s = Math.round(performance.now() - started) / 1000;
      expect(facts.denied_after_s * 1000 < delay, `the server waited ${facts.denied_after_s} s, for the late answer`);
      await Promise.race([done, sleep(delay + 2000)]);
      await sleep(200);
      value(await call(c, 'read', { path: NOTES }), 'read after the late answer');
    } finally {
      await c.close();
    }
    expect(asked.length === 1 && asked[0].includes('/workspace/late.txt'), `unexpected elicitations: ${describe(asked)}`);
    facts.asked = asked.length;
  },

  async no_elicitation(opts) {
    let requests = 0;
    const c = await connect(opts, { onRequest: async () => { requests += 1; throw new McpError(-32601, 'Method not found'); } });
    try {
      facts.write = error(await call(c, 'write', { path: '/workspace/unasked.txt', content: 'no\n' }), 'approval_denied', 'write without elicitation');
      value(await call(c, 'read', { path: NOTES }), 'read before edit');
      facts.edit = error(await call(c, 'edit', { path: NOTES, old_text: 'alpha line', new_text: 'UNASKED' }), 'approval_denied', 'edit without elicitation');
    } finally {
      await c.close();
    }
    expect(requests === 0, `the server sent ${requests} request(s) (elicitation) to a client without the capability`);
    facts.asked = requests;
  },

  async sessions(opts) {
    expect(opts.transport === 'http', 'the sessions scenario needs --transport http (two connections)');
    const aAnswers = elicitations({ action: 'accept' }, { action: 'accept' });
    const bAnswers = elicitations({ action: 'accept' }, { action: 'accept' });
    const a = await connect(opts, { elicit: aAnswers });
    const b = await connect(opts, { elicit: bAnswers });
    try {
      expect(a.transport?.sessionId && a.transport.sessionId !== b.transport?.sessionId,
        `the two connections share a session id: ${a.transport?.sessionId}`);
      value(await call(a, 'read', { path: NOTES }), 'A reads');
      facts.b_unread = error(await call(b, 'edit', { path: NOTES, old_text: 'omega line', new_text: 'OMEGA LINE' }), 'stale_baseline', 'B edits a file only A read');
      expect(bAnswers.asked.length === 0, `B was asked to approve a call the baseline check refuses: ${describe(bAnswers.asked)}`);
      value(await call(a, 'edit', { path: NOTES, old_text: 'alpha line', new_text: 'ALPHA LINE' }), 'A edits what A read');
      value(await call(b, 'read', { path: NOTES }), 'B reads');
      value(await call(b, 'edit', { path: NOTES, old_text: 'omega line', new_text: 'OMEGA LINE' }), 'B edits what B read');
      facts.a_stale = error(await call(a, 'edit', { path: NOTES, old_text: 'needle', new_text: 'NEEDLE' }), 'stale_baseline', 'A edits a file B changed since');
    } finally {
      await a.close();
      await b.close();
    }
    facts.asked = { a: aAnswers.asked.length, b: bAnswers.asked.length };
  },

  async cancel(opts) {
    const after = Number(opts.args.after ?? '1.0') * 1000;
    const c = await connect(opts);
    try {
      // A client calls what it has seen listed: on a first start the spin
      // tool's component may still be compiling.
      const until = performance.now() + 120_000;
      while (!(await names(c)).includes('spin')) {
        expect(performance.now() < until, 'spin was never listed');
        await new Promise((r) => setTimeout(r, 200));
      }
      let started = performance.now();
      try {
        // Aborting the request makes the SDK send notifications/cancelled.
        const r = await c.callTool({ name: 'spin', arguments: {} }, undefined, { signal: AbortSignal.timeout(after) });
        throw new Failure(`spin returned instead of being cancelled: ${describe(r)}`);
      } catch (e) {
        if (e instanceof Failure) throw e;
        expect(e instanceof McpError, `spin failed with ${e}, expected the SDK's cancellation error`);
      }
      facts.cancelled_after_s = Math.round(performance.now() - started) / 1000;
      started = performance.now();
      value(await call(c, 'read', { path: NOTES }), 'read after the cancel');
      const follow = (performance.now() - started) / 1000;
      facts.follow_up_s = Math.round(follow * 1000) / 1000;
      expect(follow < 5, `the read after the cancel took ${follow.toFixed(1)}s`);
    } finally {
      await c.close();
    }
  },

  async reload(opts) {
    const toolbox = opts.args.toolbox;
    expect(toolbox, 'reload needs toolbox=PATH');
    const changes = [];
    let wake = () => {};
    const c = await connect(opts, { onListChanged: () => { changes.push(performance.now()); wake(); } });
    try {
      const before = await names(c);
      expect(JSON.stringify(before) === '["read"]', `expected only read before the change, got ${before}`);
      const started = performance.now();
      const notified = new Promise((resolve) => { wake = resolve; });
      writeFileSync(toolbox, 'version = 1\n[[component]]\nsource = "builtin:read"\n[[component]]\nsource = "builtin:list"\n');
      const timedOut = await Promise.race([notified.then(() => false), sleep(10_000).then(() => true)]);
      expect(!timedOut, 'no notifications/tools/list_changed within 10 s of adding builtin:list');
      facts.notified_after_s = Math.round(performance.now() - started) / 1000;
      const after = await names(c);
      // A tool added by a reload comes after those listed before it (the
      // advertised prefix stays put).
      expect(JSON.stringify(after) === '["read","list"]', `expected read then list after the change, got ${after}`);
      value(await call(c, 'list', { path: '/workspace' }), 'call the added list tool');
      const count = changes.length;
      writeFileSync(toolbox, 'version = 1\n[[component]\nsource = "builtin:read\n');
      await sleep(3000);
      const still = await names(c);
      expect(JSON.stringify(still) === JSON.stringify(after), `a broken toolbox changed the tools: ${still}`);
      value(await call(c, 'read', { path: NOTES }), 'read after the broken toolbox');
      Object.assign(facts, { before, after, after_broken: still, notified_on_broken: changes.length > count });
    } finally {
      await c.close();
    }
  },

  // Code mode: only run_code is listed; scripts read and grep, catch a
  // denied path, write through asking tools (accepted once, declined once),
  // throw after two writes, and spin.
  async code(opts) {
    const { language = 'javascript' } = opts.args;
    // Accept the edit and the first script's effects; then decline the edit
    // (the script goes on) and its effects (nothing is committed).
    const yes = { action: 'accept', content: { approve: true } };
    const answers = elicitations(yes, yes, { action: 'decline' }, { action: 'decline' });
    const c = await connect(opts, { elicit: answers });
    try {
      const tools = (await c.listTools()).tools;
      facts.tools = tools.map((t) => t.name);
      const runCode = tools.find((t) => t.name === 'run_code');
      expect(runCode, `run_code is not listed: ${facts.tools}`);
      facts.description_bytes = (runCode.description ?? '').length;
      expect(runCode.description.includes(declared('read', language)), "no typed API in run_code's description");
      facts.summary = scriptResult(await call(c, 'run_code', { code: script('summary', language) }), 'summary');
      facts.denied = scriptResult(await call(c, 'run_code', { code: script('denied', language) }), 'denied');
      const accepted = await call(c, 'run_code', { code: script('asking', language) });
      facts.accepted = scriptResult(accepted, 'accepted');
      facts.accepted_calls = accepted._meta?.toolhost?.extra?.calls;
      expect(existsSync('from-script.txt'), "the accepted script's write was not committed");
      renameSync('from-script.txt', 'from-script-accepted.txt');
      facts.declined = error(await call(c, 'run_code', { code: script('asking', language) }), 'approval_denied', 'declined');
      expect(!existsSync('from-script.txt'), "the declined script's write was committed");
      facts.thrown = error(await call(c, 'run_code', { code: script('throws', language) }), 'script_error', 'throws');
      const spun = await call(c, 'run_code', { code: script('spins', language) });
      expect(spun.isError === true, `spinning did not fail: ${describe(spun)}`);
      facts.spun = spun._meta?.toolhost?.error;
    } finally {
      await c.close();
    }
    facts.asked = answers.asked.map((a) => a.message);
  },

  async fetch(opts) {
    const { ok, denied, token = '' } = opts.args;
    expect(ok && denied, 'fetch needs ok=URL denied=URL');
    const c = await connect(opts);
    try {
      const page = value(await call(c, 'fetch', { url: ok }), `fetch ${ok}`);
      expect(page.status === 200, `status ${page.status}`);
      expect((page.text ?? '').includes(token), `the page text lacks ${token}: ${describe(page.text)}`);
      facts.page = { url: page.url, status: page.status, contentType: page.contentType, text: page.text };
      facts.denied = error(await call(c, 'fetch', { url: denied }), 'network_denied', `fetch ${denied}`);
    } finally {
      await c.close();
    }
  },
};

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const deadline = setTimeout(() => {
    process.stderr.write(`ts_client: FAILED ${opts.scenario} (${opts.transport}): no result within ${SCENARIO_DEADLINE_MS / 1000} s\n`);
    process.exit(1);
  }, SCENARIO_DEADLINE_MS);
  try {
    await SCENARIOS[opts.scenario](opts);
  } catch (e) {
    const why = e instanceof Failure ? e.message : (e?.stack ?? String(e));
    process.stderr.write(`ts_client: FAILED ${opts.scenario} (${opts.transport}): ${why}\n`);
    for (const p of problems) process.stderr.write(`ts_client: also: ${p}\n`);
    process.exit(1);
  }
  clearTimeout(deadline);
  if (problems.length) {
    process.stderr.write(
      `ts_client: FAILED ${opts.scenario} (${opts.transport}): ${problems.length} result(s) rejected by the SDK's callTool ` +
        `(the rest of the scenario held; facts: ${describe(facts)}):\n`,
    );
    for (const p of problems) process.stderr.write(`ts_client:   ${p}\n`);
    process.exit(1);
  }
  if (unknownFormats.size) facts.ajv_unknown_formats = [...unknownFormats].sort();
  Object.assign(facts, { scenario: opts.scenario, transport: opts.transport, sdk: SDK_VERSION, client_s: Math.round(performance.now() - started) / 1000 });
  process.stdout.write(`${JSON.stringify(facts)}\n`);
  process.exit(0);
}

main();
