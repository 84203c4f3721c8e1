// The file-system backend for native tests: Node's `fs` over host
// directories mapped to guest paths, as a policy's `[[fs]]` grants map them.
//
// It mirrors what wasi:filesystem gives a component (grants, types, error
// codes) closely enough to test tool logic, but it is no sandbox: it does
// not stop a symbolic link from leading out of a grant. Only tests use it.

import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { FsFailure } from './files.js';
import { resolvePath } from './paths.js';

function failure(err) {
  switch (err?.code) {
    case 'ENOENT':
      return new FsFailure('not_found');
    case 'EISDIR':
      return new FsFailure('is_directory');
    case 'ENOTDIR':
      return new FsFailure('not_a_directory');
    case 'EACCES':
    case 'EPERM':
      return new FsFailure('permission_denied');
    default:
      return new FsFailure('io_error', err?.message ?? String(err));
  }
}

function kind(st) {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  return 'other';
}

/**
 * A backend serving `grants`, an object from guest paths to host
 * directories, e.g. `{ '/workspace': '/tmp/test-123' }`.
 */
export function nodeFileSystem(grants) {
  const list = Object.entries(grants).map(([guest, host]) => ({
    guest: resolvePath(guest, '/'),
    host: resolve(host),
  }));
  const hostPath = (grant, rel) => join(grant.host, rel);
  return {
    grants: () => list,

    stat(grant, rel) {
      try {
        const st = statSync(hostPath(grant, rel));
        return { type: kind(st), size: st.size };
      } catch (err) {
        throw failure(err);
      }
    },

    read(grant, rel, limit) {
      let fd;
      try {
        fd = openSync(hostPath(grant, rel), 'r');
        const st = fstatSync(fd);
        if (st.isDirectory()) throw new FsFailure('is_directory');
        const want = Math.min(st.size, limit) + 1;
        const out = new Uint8Array(want);
        let offset = 0;
        while (offset < want) {
          const n = readSync(fd, out, offset, want - offset, offset);
          if (n === 0) break;
          offset += n;
        }
        return out.subarray(0, offset);
      } catch (err) {
        throw err instanceof FsFailure ? err : failure(err);
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    },
  };
}
