// The file-system backend inside a component: wasi:filesystem, through the
// bindings componentize-js generates for the world in ../wit/world.wit.
//
// Imports `wasi:filesystem/preopens`, so it only loads inside a componentize
// build; kit/component.js installs it. Conventions of those bindings: flags
// are objects of booleans (`{ symlinkFollow: true }`), enums are their WIT
// names as strings, `u64` is a BigInt, a `result`'s error is thrown as an
// Error whose `payload` is the WIT value (here an `error-code` string), and
// resources are released with their `Symbol.dispose` method.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

import { FsFailure } from './files.js';
import { resolvePath } from './paths.js';

// Reads are done in chunks of this size (the host may return less).
const CHUNK = 1024 * 1024;

// The symbol the bindings use for a resource's drop.
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');

// The granted directories, asked for once per instance, at the first use:
// never at module top level, which runs at build time.
let grants;

const FOLLOW = { symlinkFollow: true };

function failure(err) {
  const code = err && typeof err === 'object' && 'payload' in err ? err.payload : undefined;
  if (typeof code !== 'string') return err;
  switch (code) {
    case 'no-entry':
      return new FsFailure('not_found');
    case 'is-directory':
      return new FsFailure('is_directory');
    case 'not-directory':
      return new FsFailure('not_a_directory');
    case 'access':
    case 'not-permitted':
      return new FsFailure('permission_denied');
    case 'loop':
      return new FsFailure('io_error', 'too many levels of symbolic links');
    case 'name-too-long':
      return new FsFailure('io_error', 'the path is too long');
    default:
      return new FsFailure('io_error', `wasi:filesystem error ${code}`);
  }
}

function kind(type) {
  if (type === 'regular-file') return 'file';
  if (type === 'directory') return 'directory';
  return 'other';
}

function dispose(resource) {
  try {
    resource[DISPOSE]?.();
  } catch {
    // Dropping a handle cannot fail in a way a tool could act on.
  }
}

export const wasiFileSystem = {
  grants() {
    grants ??= getDirectories().map(([descriptor, guest]) => ({
      guest: resolvePath(guest, '/'),
      descriptor,
    }));
    return grants;
  },

  stat(grant, rel) {
    try {
      const st = rel === '.' ? grant.descriptor.stat() : grant.descriptor.statAt(FOLLOW, rel);
      return { type: kind(st.type), size: Number(st.size) };
    } catch (err) {
      throw failure(err);
    }
  },

  read(grant, rel, limit) {
    let fd;
    try {
      fd = grant.descriptor.openAt(FOLLOW, rel, {}, { read: true });
      const st = fd.stat();
      if (st.type === 'directory') throw new FsFailure('is_directory');
      const size = Number(st.size);
      // One byte past the limit tells the caller the file is too large.
      const want = Math.min(size, limit) + 1;
      const out = new Uint8Array(want);
      let offset = 0;
      while (offset < want) {
        const [bytes, eof] = fd.read(BigInt(Math.min(CHUNK, want - offset)), BigInt(offset));
        out.set(bytes, offset);
        offset += bytes.length;
        if (eof || bytes.length === 0) break;
      }
      return offset === want ? out : out.subarray(0, offset);
    } catch (err) {
      throw err instanceof FsFailure ? err : failure(err);
    } finally {
      if (fd) dispose(fd);
    }
  },
};
