import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import * as kit from '../index.js';
import { call } from '../testing.js';

afterEach(() => {
  kit.takeReports();
  kit.cancelForTest(false);
  kit.setContextBackend(undefined);
});

test('reports are kept natively, oldest first, and taken once', () => {
  const c = kit.ctx();
  c.progress(1, { total: 2, message: 'half' });
  c.progress(2);
  c.progress(3n, { total: 4n });
  c.log('warning', 'w');
  assert.deepEqual(kit.takeReports(), [
    { type: 'progress', done: 1, total: 2, message: 'half' },
    { type: 'progress', done: 2 },
    { type: 'progress', done: 3n, total: 4n },
    { type: 'log', level: 'warning', message: 'w' },
  ]);
  assert.deepEqual(kit.takeReports(), []);
  assert.equal(kit.ctx(), c);
});

test('cancellation is false unless a test sets it', () => {
  assert.equal(kit.ctx().cancelled(), false);
  kit.cancelForTest();
  assert.equal(kit.ctx().cancelled(), true);
  kit.cancelForTest(false);
  assert.equal(kit.ctx().cancelled(), false);
});

test('the levels mirror the WIT log-level', () => {
  assert.deepEqual(kit.LOG_LEVELS, ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);
  for (const level of kit.LOG_LEVELS) kit.ctx().log(level, level);
  assert.deepEqual(
    kit.takeReports().map((r) => r.level),
    kit.LOG_LEVELS,
  );
});

test('bad arguments are bugs, and report nothing', () => {
  const c = kit.ctx();
  assert.throws(() => c.progress(-1), RangeError);
  assert.throws(() => c.progress(1n << 64n), RangeError);
  assert.throws(() => c.progress(1, { total: -1 }), RangeError);
  assert.throws(() => c.progress(1.5), TypeError);
  assert.throws(() => c.progress('1'), TypeError);
  assert.throws(() => c.progress(Number.MAX_SAFE_INTEGER + 1), TypeError);
  assert.throws(() => c.progress(1, { message: 3 }), TypeError);
  assert.throws(() => c.log('warn', 'x'), /not one of debug, info/);
  assert.throws(() => c.log('info', undefined), TypeError);
  assert.deepEqual(kit.takeReports(), []);
  c.progress((1n << 64n) - 1n, { total: null, message: null });
  assert.deepEqual(kit.takeReports(), [{ type: 'progress', done: (1n << 64n) - 1n }]);
});

test('a tool reports while it runs, and stops when cancelled', () => {
  const count = new kit.Tool({
    name: 'count',
    description: 'Counts to n.',
    inputSchema: kit.objectSchema({ n: { type: 'integer' } }, ['n']),
    outputSchema: kit.objectSchema({ counted: { type: 'integer' } }, ['counted']),
    execute({ n }) {
      let done = 0;
      while (done < n) {
        if (kit.ctx().cancelled()) throw new kit.ToolError('cancelled', 'the call was cancelled');
        done += 1;
        kit.ctx().progress(done, { total: n });
      }
      kit.ctx().log('info', `counted to ${done}`);
      return { counted: done };
    },
  });
  const toolset = new kit.Toolset([count]);
  assert.deepEqual(call(toolset, 'count', { n: 2 }).value, { counted: 2 });
  assert.deepEqual(kit.takeReports(), [
    { type: 'progress', done: 1, total: 2 },
    { type: 'progress', done: 2, total: 2 },
    { type: 'log', level: 'info', message: 'counted to 2' },
  ]);
  kit.cancelForTest(true);
  assert.throws(() => call(toolset, 'count', { n: 2 }), (err) => err.code === 'cancelled');
});

test('a backend receives the checked calls', () => {
  const calls = [];
  kit.setContextBackend({
    progress: (...a) => calls.push(['progress', ...a]),
    log: (...a) => calls.push(['log', ...a]),
    cancelled: () => 1,
  });
  kit.ctx().progress(3, { message: 'm' });
  kit.ctx().log('alert', 'a');
  assert.equal(kit.ctx().cancelled(), true);
  kit.setContextBackend(undefined);
  assert.deepEqual(calls, [
    ['progress', 3, undefined, 'm'],
    ['log', 'alert', 'a'],
  ]);
  assert.deepEqual(kit.takeReports(), []);
  assert.equal(kit.ctx().cancelled(), false);
});
