// The script's world, set up before the script runs: `tools`, `ToolError`
// and `console`. Called once with the two native functions; neither is
// ever reachable from the script's global scope. Returns `settle`, which
// the runner calls with each started call's outcome. Everything the bridge
// uses is taken here, before the script can replace it: a script that
// rewrites JSON, Promise or Object.prototype changes what it sees itself,
// never what the host receives (the host checks every call anyway).
(function (nativeStart, nativeConsole) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const create = Object.create;
  const P = Promise;
  const resolve = (v) => new P((ok) => ok(v));
  const reject = (e) => new P((_, no) => no(e));
  const StringOf = String;
  const isArray = Array.isArray;
  // The calls started and not settled: handle -> [resolve, reject, error],
  // the error made when the call was (its stack is the script's line).
  const pending = create(null);

  // A failed tool call: its stable code, the message the host wrote, the
  // tool's name and the details the host gave, if any.
  class ToolError extends Error {
    constructor(code, message, tool, info) {
      super(message);
      defineProperty(this, "name", { value: "ToolError" });
      this.code = code;
      this.tool = tool;
      if (info !== undefined && info !== null) this.info = info;
    }
  }
  freeze(ToolError.prototype);
  freeze(ToolError);

  function call(name, args) {
    if (args === undefined) args = {};
    if (args === null || typeof args !== "object" || isArray(args)) {
      return reject(new ToolError("invalid_arguments",
        `tools.${name} takes one object of arguments`, name));
    }
    let text;
    try {
      text = stringify(args);
    } catch (e) {
      return reject(new ToolError("invalid_arguments",
        `the arguments of tools.${name} are not JSON: ${e && e.message}`, name));
    }
    // The host starts the call now (calls start in the order the script
    // makes them, and run together); its outcome settles the promise.
    const handle = nativeStart(StringOf(name), text);
    const failed = new ToolError("", "", StringOf(name));
    return new P((ok, no) => { pending[handle] = [ok, no, failed]; });
  }

  // A started call ended: [true, value as JSON] or [false, failure as JSON].
  function settle(handle, ok, text) {
    const p = pending[handle];
    if (p === undefined) return;
    delete pending[handle];
    if (ok) { p[0](parse(text)); return; }
    const f = parse(text);
    const e = p[2];
    e.code = f.code;
    e.message = f.message;
    if (f.info !== undefined && f.info !== null) e.info = f.info;
    p[1](e);
  }

  const tools = new Proxy(freeze(create(null)), {
    get(_, name) {
      return typeof name === "string" ? (args) => call(name, args) : undefined;
    },
    has(_, name) { return typeof name === "string"; },
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
    setPrototypeOf() { return false; },
  });

  const show = (v) => {
    if (typeof v === "string") return v;
    try {
      const s = stringify(v);
      return s === undefined ? StringOf(v) : s;
    } catch (_) {
      return StringOf(v);
    }
  };
  const logger = (level) => (...args) => { nativeConsole(level, args.map(show).join(" ")); };
  const console = freeze({
    log: logger("log"),
    info: logger("info"),
    debug: logger("debug"),
    warn: logger("warn"),
    error: logger("error"),
  });

  const fixed = { writable: false, enumerable: false, configurable: false };
  defineProperty(globalThis, "tools", { value: tools, ...fixed });
  defineProperty(globalThis, "ToolError", { value: ToolError, ...fixed });
  defineProperty(globalThis, "console", { value: console, ...fixed });
  return settle;
})
