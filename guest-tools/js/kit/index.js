// Authoring kit for toolhost tool components written in JavaScript.
//
// A tool is a plain function from an arguments object to a JSON-serializable
// value, declared with a `Tool` (name, description, JSON Schemas,
// annotations, path arguments) and grouped in a `Toolset`, for the contract
// toolhost:tool@0.3.0. While it runs, a tool may report progress, log, and
// ask whether its call was cancelled through `ctx()` (context.js). This
// module and the ones it re-exports are plain JavaScript: they import
// nothing from the component bindings and nothing from Node, so tool logic
// and the kit run natively under `node --test`. The WIT plumbing lives in
// `component.js`, which the component's entry module uses:
//
//     // tools/<name>/app.js, the module componentize-js builds
//     import { exportToolset } from '../../kit/component.js';
//     import { TOOLSET } from './src/tools.js';
//
//     export const tool = exportToolset(TOOLSET); // the `tool` interface
//
// A tool:
//
//     import * as kit from '../../../kit/index.js'; // from tools/<name>/src/
//
//     export const COUNT_LINES = new kit.Tool({
//       name: 'count_lines',
//       description: 'Counts the lines of a text file.',
//       inputSchema: kit.objectSchema({ path: { type: 'string' } }, ['path']),
//       outputSchema: kit.objectSchema({ lines: { type: 'integer' } }, ['lines']),
//       annotations: { readOnly: true, idempotent: true },
//       paths: [{ pointer: '/path', access: 'read' }],
//       execute(args) {
//         const text = kit.readTextFile(args.path); // not_found, is_directory, ...
//         return { lines: text.split('\n').length };
//       },
//       render: (args, value) => [kit.text(`${value.lines} lines`)],
//     });
//     export const TOOLSET = new kit.Toolset([COUNT_LINES]);
//
// Rules of the road inside a component (componentize-js evaluates the entry
// module at build time and snapshots the engine):
//
// - nothing at module top level may touch files, the clock or randomness:
//   it runs at build time, and every call starts from that snapshot;
// - there is no `fs` module, no `process`, no `require`: files are read
//   through `readTextFile` / `statPath` (kit/files.js), which use
//   wasi:filesystem inside a component and Node's `fs` in tests;
// - failures the model should see are `ToolError`s with a stable snake_case
//   code; any other exception becomes `internal_error`, never a trap.
//
// A tool that renders nothing itself says `hostRenders: true` (and has no
// `render`): the host then renders its value and never calls `render`, which
// saves a second instance per call. Natively, what a tool reported through
// `ctx()` is in `takeReports()`.

export { LOG_LEVELS, cancelForTest, ctx, setContextBackend, takeReports } from './context.js';
export { ToolError, asToolError } from './errors.js';
export { dirname, initialCwd, resolvePath, setInitialCwdProvider } from './paths.js';
export {
  DEFAULT_MAX_BYTES,
  FileError,
  FsFailure,
  readBytes,
  readTextFile,
  setFileSystem,
  statPath,
} from './files.js';
export {
  PATH_ACCESSES,
  SCHEMA_DIALECT,
  Tool,
  Toolset,
  audio,
  dumps,
  image,
  objectSchema,
  resource,
  resourceLink,
  text,
} from './tool.js';
