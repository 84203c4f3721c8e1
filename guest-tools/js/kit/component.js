// The WIT plumbing: a `Toolset` as the `tool` export of toolhost:tool@0.3.0,
// and the kit's `ctx()` on its `context` import.
//
// It imports the bindings componentize-js generates (`wasi:` and `toolhost:`
// specifiers), so it only loads inside a componentize build; tool logic never
// imports it. The records it hands the bindings are built by wit.js.
// The component's entry module does:
//
//     import { exportToolset } from '../../kit/component.js';
//     import { TOOLSET } from './src/tools.js';
//
//     export const tool = exportToolset(TOOLSET);
//
// componentize-js binds the entry module's export named after the
// interface (`tool`) to the exported `toolhost:tool/tool` interface.
//
// Conventions of the bindings (componentize-js 0.22): records are objects
// with camelCase fields, variants `{ tag: 'resource-link', val }`, an
// `option` is the value or `undefined`, and an exported function's `result`
// is its return value (ok) or what it throws (err): a thrown non-Error value
// is the error payload, while a thrown `Error` traps. So everything thrown
// here is caught and turned into a `tool-failure` record.

import { getEnvironment as wasiGetEnvironment, initialCwd as wasiInitialCwd } from 'wasi:cli/environment@0.2.12';
import { cancelled, log, progress } from 'toolhost:tool/context@0.3.0';

import { setContextBackend } from './context.js';
import { asToolError } from './errors.js';
import { setFileSystem } from './files.js';
import { setInitialCwdProvider } from './paths.js';
import { wasiFileSystem } from './wasi.js';
import { contentBlock, descriptor, failure, witContext } from './wit.js';

/**
 * The object implementing the `tool` interface for `toolset`.
 *
 * It installs the wasi:filesystem backend, points the kit's `initialCwd` at
 * wasi:cli/environment's `initial-cwd` (the first granted directory, e.g.
 * `/workspace`), so relative path arguments resolve where the host's path
 * checks resolved them, and the kit's `ctx()` at the `toolhost:tool/context`
 * import. All are only called while a call runs, never at build time.
 */
export function exportToolset(toolset) {
  setInitialCwdProvider(wasiInitialCwd);
  setFileSystem(wasiFileSystem);
  setContextBackend(witContext({ progress, log, cancelled }));
  // Built once, at build time (the snapshot keeps them): list-tools then
  // costs nothing but the copy into the host.
  const descriptors = toolset.tools.map(descriptor);

  return {
    listTools() {
      restoreStringIterator();
      skipCodePointCount();
      return descriptors;
    },

    execute(name, argumentsJson) {
      restoreStringIterator();
      try {
        return toolset.executeJson(name, argumentsJson);
      } catch (err) {
        throw failure(asToolError(err));
      } finally {
        skipCodePointCount();
      }
    },

    render(name, argumentsJson, valueJson) {
      restoreStringIterator();
      // An exception here is a bug: it traps, and the host reports
      // `render_failed`.
      const content = toolset.renderJson(name, argumentsJson, valueJson);
      skipCodePointCount();
      return content === undefined ? undefined : content.map(contentBlock);
    },
  };
}

// ── the cost of handing strings to the host ────────────────────────────────
//
// The bindings componentize-js 0.22 generates copy every string an export
// returns into the component's memory with a function that also computes
// `[...s].length`, a code point count nothing reads. Spreading a string
// runs the engine's interpreter once per character: about 19,000 fuel a
// byte, more than a tool's own work on a large value (md_links on an 895 KB
// document: 1.65 x 10^10 of 2.38 x 10^10 fuel went there).
//
// So while the bindings copy a result out (after the export has returned),
// `String.prototype[Symbol.iterator]` yields nothing, and the spread costs
// nothing; the copy itself uses TextEncoder and is unaffected. The bindings
// run in a realm (a global) of their own, so it is *their* String.prototype:
// reached through an array they create (the list `get-environment`
// returns), whose constructor's constructor is that realm's `Function`.
// Every export restores the real iterator first, so no code runs with the
// stand-in but the copy. Should a later componentize-js build its bindings
// otherwise (no separate realm, no such array), nothing is swapped.

let bindings; // { proto, iterator } of the bindings' String.prototype, null: none

function bindingsStrings() {
  if (bindings === undefined) {
    bindings = null;
    try {
      const list = wasiGetEnvironment();
      const realmFunction = Object.getPrototypeOf(list).constructor.constructor;
      const proto = realmFunction('return String.prototype')();
      if (proto !== String.prototype && typeof proto[Symbol.iterator] === 'function') {
        bindings = { proto, iterator: proto[Symbol.iterator] };
      }
    } catch {
      bindings = null;
    }
  }
  return bindings;
}

function emptyIterator() {
  return { next: () => ({ done: true, value: undefined }) };
}

function skipCodePointCount() {
  const b = bindingsStrings();
  if (b) b.proto[Symbol.iterator] = emptyIterator;
}

function restoreStringIterator() {
  if (bindings) bindings.proto[Symbol.iterator] = bindings.iterator;
}
