// Path arguments, resolved the way the host's path checks resolve them.

let cwdProvider = () => undefined;

/**
 * Sets where `initialCwd` comes from. The component glue sets it to
 * wasi:cli/environment's `initial-cwd`; tests set their own.
 */
export function setInitialCwdProvider(provider) {
  cwdProvider = provider;
}

/**
 * The initial working directory the host gives (normally the guest path of
 * the first granted directory, e.g. `/workspace`), or `/`.
 */
export function initialCwd() {
  const cwd = cwdProvider();
  if (!cwd) return '/';
  return cwd.startsWith('/') ? cwd : `/${cwd}`;
}

/**
 * Resolves a path the way the host's path checks do: a relative path is
 * joined onto `base` (default: `initialCwd()`), then `.` and empty
 * components are dropped and `..` pops one (never above `/`).
 *
 * Every path argument goes through it (`readTextFile` and `statPath` do it
 * for you): a component has no working directory of its own, and StarlingMonkey
 * offers no file API that would resolve one.
 */
export function resolvePath(path, base = undefined) {
  const joined = path.startsWith('/') ? path : `${(base ?? initialCwd()).replace(/\/+$/, '')}/${path}`;
  const parts = [];
  for (const part of joined.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      parts.pop();
      continue;
    }
    parts.push(part);
  }
  return `/${parts.join('/')}`;
}

/** The directory part of an absolute, resolved path (`/` for `/x`). */
export function dirname(path) {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}
