// What a running tool tells its caller, and asks about its call (contract
// 0.3.0's `context` import):
//
//     import * as kit from '../../../kit/index.js';
//
//     for (const [i, path] of files.entries()) {
//       if (kit.ctx().cancelled()) throw new kit.ToolError('cancelled', 'the call was cancelled');
//       scan(path);
//       kit.ctx().progress(i + 1, { total: files.length, message: 'files searched' });
//     }
//     kit.ctx().log('info', `${files.length} files searched`);
//
// Every function is cheap and never fails on the host's side. The host
// bounds what a call reports (a rate and a byte budget set by its policy;
// past them reports are dropped, and the latest progress is still delivered
// at the end), records it with the call, and forwards it to the client only
// when the client asked for it. So report freely, but not in the inner loop:
// once per file or per thousand lines is plenty.
//
// Inside a component, component.js points the context at the
// `toolhost:tool/context` import. Natively (unit tests of tool logic)
// reports are kept in a list `takeReports()` returns, and `cancelled()` is
// false unless a test called `cancelForTest()`. Plain JavaScript, like the
// rest of the kit but component.js and wasi.js.

/** The WIT `log-level` cases (the syslog levels MCP uses), least to most severe. */
export const LOG_LEVELS = Object.freeze(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

const U64_MAX = (1n << 64n) - 1n;

// The backend outside a component: reports are kept for tests.
const native = {
  reports: [],
  isCancelled: false,
  progress(done, total, message) {
    const report = { type: 'progress', done };
    if (total !== undefined) report.total = total;
    if (message !== undefined) report.message = message;
    this.reports.push(report);
  },
  log(level, message) {
    this.reports.push({ type: 'log', level, message });
  },
  cancelled() {
    return this.isCancelled;
  },
};

let backend = native;

/**
 * Sets where the context's calls go: an object with `progress(done, total,
 * message)`, `log(level, message)` and `cancelled()`, called with checked
 * arguments (`total` and `message` undefined when absent). component.js
 * sets it to the `toolhost:tool/context` import; `undefined` restores the
 * native one.
 */
export function setContextBackend(b) {
  backend = b ?? native;
}

// A u64 given as a Number (a non-negative safe integer) or a BigInt.
function u64(what, v) {
  if (typeof v === 'bigint') {
    if (v < 0n || v > U64_MAX) throw new RangeError(`progress: ${what} must be between 0 and 2^64 - 1, not ${v}`);
    return v;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    throw new TypeError(`progress: ${what} must be an integer (a Number or a BigInt), not ${String(v)}`);
  }
  if (v < 0) throw new RangeError(`progress: ${what} must not be negative, not ${v}`);
  return v;
}

function optionalString(what, v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string, not ${typeof v}`);
  return v;
}

/** The running call's context: get it with `ctx()`. */
class Ctx {
  /**
   * Reports progress: `done` units of `total` (when known), with an optional
   * short `message`. `done` should grow from call to call. `done` and
   * `total` are non-negative integers (Numbers or BigInts); anything else
   * throws (a bug in the tool).
   */
  progress(done, { total = undefined, message = undefined } = {}) {
    const d = u64('done', done);
    const t = total === undefined || total === null ? undefined : u64('total', total);
    backend.progress(d, t, optionalString('progress: message', message));
  }

  /**
   * Logs a message for the person or agent at the client. `level` is one of
   * `LOG_LEVELS` ('debug', 'info', 'notice', 'warning', 'error',
   * 'critical', 'alert', 'emergency').
   */
  log(level, message) {
    if (!LOG_LEVELS.includes(level)) {
      throw new TypeError(`log level ${JSON.stringify(level)} is not one of ${LOG_LEVELS.join(', ')}`);
    }
    if (typeof message !== 'string') throw new TypeError(`log: message must be a string, not ${typeof message}`);
    backend.log(level, message);
  }

  /**
   * Whether the caller cancelled the call: check it between units of work
   * and return early. (The host stops the instance anyway; checking lets
   * the tool stop where it chooses.)
   */
  cancelled() {
    return Boolean(backend.cancelled());
  }
}

const theCtx = Object.freeze(new Ctx());

/** The running call's context. */
export function ctx() {
  return theCtx;
}

/**
 * The reports made natively since the last call, oldest first, and forgets
 * them: `{ type: 'progress', done, total?, message? }` and `{ type: 'log',
 * level, message }`. Inside a component reports go to the host: always empty.
 */
export function takeReports() {
  return native.reports.splice(0);
}

/** Makes `ctx().cancelled()` answer `cancelled` natively (until called again). */
export function cancelForTest(cancelled = true) {
  native.isCancelled = Boolean(cancelled);
}
