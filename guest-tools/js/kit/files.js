// Reading files from the directories the policy grants.
//
// StarlingMonkey (the engine componentize-js embeds) has no file API: no
// `fs`, no `file:` fetch. A component reaches files through wasi:filesystem,
// whose preopened directories are the policy's grants, each under its guest
// path (`/workspace`). This module is the part of that every backend shares:
// resolving a path argument against the initial working directory, finding
// the grant that holds it, and turning failures into `FileError`s with
// stable codes. The backend does the I/O: kit/wasi.js inside a component
// (installed by kit/component.js), kit/node.js in native tests.
//
// A backend is an object with
//   grants()                 -> [{ guest: '/workspace', ... }]  (absolute guest paths)
//   stat(grant, rel)         -> { type: 'file' | 'directory' | 'other', size: number }
//   read(grant, rel, limit)  -> Uint8Array of at most limit + 1 bytes
// where `rel` is a relative path inside the grant ('.' for the grant itself);
// failures are thrown as `FsFailure(code)`.

import { ToolError } from './errors.js';
import { resolvePath } from './paths.js';

/** The default limit of `readBytes` and `readTextFile`: 16 MiB. */
export const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

/**
 * What a backend throws: `code` is one of `not_found`, `is_directory`,
 * `not_a_directory`, `permission_denied`, `io_error`; `detail` is for
 * `io_error`'s message and info.
 */
export class FsFailure extends Error {
  constructor(code, detail = undefined) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = 'FsFailure';
    this.code = code;
    this.detail = detail;
  }
}

/**
 * A failure on a file: a `ToolError` whose code is `not_found`,
 * `is_directory`, `not_a_directory`, `permission_denied`, `not_granted` (the
 * path is outside every directory the policy grants), `file_too_large`,
 * `not_utf8`, `binary_file` or `io_error`. `path` is the resolved path.
 */
export class FileError extends ToolError {
  constructor(code, message, path, info = undefined) {
    super(code, message, info);
    this.name = 'FileError';
    this.path = path;
  }
}

let backend;

/** Installs the file-system backend (kit/component.js and the tests do). */
export function setFileSystem(fs) {
  backend = fs;
}

function locate(path) {
  if (!backend) throw new ToolError('internal_error', 'no file system is installed (setFileSystem)');
  const resolved = resolvePath(path);
  let best;
  for (const grant of backend.grants()) {
    const g = grant.guest;
    const inside = g === '/' || resolved === g || resolved.startsWith(`${g}/`);
    if (inside && (!best || g.length > best.guest.length)) best = grant;
  }
  if (!best) return { resolved, grant: undefined, rel: undefined };
  const rest = best.guest === '/' ? resolved.slice(1) : resolved.slice(best.guest.length + 1);
  return { resolved, grant: best, rel: rest === '' ? '.' : rest };
}

function fail(code, label, resolved, detail) {
  const messages = {
    not_found: `${label} does not exist`,
    is_directory: `${label} is a directory, not a file`,
    not_a_directory: `${label}: a component of the path is not a directory`,
    permission_denied: `${label}: permission denied`,
    not_granted: `${label} (${resolved}) is outside the directories this tool may read`,
  };
  const message = messages[code] ?? `${label}: ${detail ?? 'I/O error'}`;
  return new FileError(messages[code] ? code : 'io_error', message, resolved, detail ? { detail } : undefined);
}

function withBackend(path, label, op) {
  const { resolved, grant, rel } = locate(path);
  if (!grant) throw fail('not_granted', label, resolved);
  try {
    return op(grant, rel, resolved);
  } catch (err) {
    if (err instanceof FsFailure) throw fail(err.code, label, resolved, err.detail);
    throw err;
  }
}

/**
 * What is at `path` (resolved against the initial working directory):
 * `{ path, type: 'file' | 'directory' | 'other', size }`. Throws a
 * `FileError` (`not_found`, `not_granted`, ...) when there is nothing
 * readable there.
 */
export function statPath(path, { label = path } = {}) {
  return withBackend(path, label, (grant, rel, resolved) => {
    const st = backend.stat(grant, rel);
    return { path: resolved, type: st.type, size: st.size };
  });
}

/**
 * The bytes of the file at `path` (resolved against the initial working
 * directory). `label` names the file in error messages (default: `path` as
 * given). Throws a `FileError`: `file_too_large` past `maxBytes`,
 * `is_directory`, `not_found`, ...
 */
export function readBytes(path, { maxBytes = DEFAULT_MAX_BYTES, label = path } = {}) {
  return withBackend(path, label, (grant, rel, resolved) => {
    const bytes = backend.read(grant, rel, maxBytes);
    if (bytes.length > maxBytes) {
      throw new FileError(
        'file_too_large',
        `${label} is larger than ${maxBytes} bytes, the limit of this tool`,
        resolved,
        { limit: maxBytes },
      );
    }
    return bytes;
  });
}

/**
 * The text of the UTF-8 file at `path`, a leading byte order mark dropped.
 * Throws what `readBytes` throws, `binary_file` when the file holds NUL
 * bytes, `not_utf8` when it is not valid UTF-8.
 */
export function readTextFile(path, { maxBytes = DEFAULT_MAX_BYTES, label = path } = {}) {
  const bytes = readBytes(path, { maxBytes, label });
  const resolved = resolvePath(path);
  if (bytes.indexOf(0) !== -1) {
    throw new FileError('binary_file', `${label} is a binary file (it contains NUL bytes), not text`, resolved);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FileError('not_utf8', `${label} is not valid UTF-8 text`, resolved);
  }
}
