// What a link points at, and whether it is there: classification and the
// workspace checks of `md_links`. Nothing here touches the network: an
// external URL is classified, never fetched.

import * as kit from '../../../kit/index.js';

import { parseMarkdown } from './markdown.js';

/** Extensions read as Markdown when a link's `#anchor` is checked. */
export const MARKDOWN_EXTENSIONS = ['.md', '.markdown', '.mdown', '.mkd', '.mkdn', '.mdwn', '.mdx'];

/** The largest file read (the document itself, or a target whose anchors are checked). */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
// GitHub's line anchors: #L10, #L10-L20, #L10C3-L12C5.
const LINE_ANCHOR = /^L(\d+)(?:C\d+)?(?:-L(\d+)(?:C\d+)?)?$/;

/**
 * The kind of a link target: `anchor` (`#section`), `external` (a URL with
 * a scheme, `//host/...`, or a bare `www.` address) or `relative` (a path in
 * the workspace, possibly with a `#fragment`).
 */
export function classify(target) {
  if (target.startsWith('#')) return 'anchor';
  if (SCHEME.test(target) || target.startsWith('//') || /^www\./i.test(target)) return 'external';
  return 'relative';
}

function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `{ path, fragment }` of a relative target: query dropped, percent-decoded. */
export function splitTarget(target) {
  const hash = target.indexOf('#');
  const fragment = hash >= 0 ? decode(target.slice(hash + 1)) : undefined;
  let path = hash >= 0 ? target.slice(0, hash) : target;
  const query = path.indexOf('?');
  if (query >= 0) path = path.slice(0, query);
  return { path: decode(path), fragment };
}

function countLines(text) {
  if (text === '') return 0;
  const lines = text.split(/\r\n|\r|\n/);
  return lines[lines.length - 1] === '' ? lines.length - 1 : lines.length;
}

function isMarkdown(path) {
  const lower = path.toLowerCase();
  return MARKDOWN_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

// Edit distance (Levenshtein, with a swap of two neighbours as one edit, as
// typos go), bounded: max + 1 as soon as it exceeds max. `rows` are three
// scratch arrays at least b.length + 1 long.
function distance(a, b, max, rows) {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let [before, prev, cur] = rows;
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  let prevBest = 0;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1);
      cur[j] = d;
      if (d < best) best = d;
    }
    // Past the bound for good: this row, and the one before (a swap reaches
    // two rows on).
    if (best > max && prevBest >= max) return max + 1;
    prevBest = best;
    [before, prev, cur] = [prev, cur, before];
  }
  return prev[b.length];
}

/** Suggestions computed per call at most: each compares with every anchor. */
export const MAX_SUGGESTIONS = 100;

/** The anchor closest to `wanted`, when one is close enough to be a likely typo. */
export function suggestAnchor(wanted, anchors) {
  const w = wanted.toLowerCase();
  const max = Math.max(1, Math.min(4, Math.floor(w.length / 4)));
  let longest = w.length;
  for (const a of anchors) if (a.length > longest) longest = a.length;
  const rows = [new Int32Array(longest + 1), new Int32Array(longest + 1), new Int32Array(longest + 1)];
  let best;
  let bestDistance = max + 1;
  for (const a of anchors) {
    const d = distance(w, a.toLowerCase(), max, rows);
    if (d < bestDistance) {
      best = a;
      bestDistance = d;
    }
  }
  return best;
}

// Lowercased copies of anchor sets, made once per set.
const lowered = new WeakMap();

function hasAnchor(anchors, fragment) {
  if (anchors.has(fragment)) return true;
  // GitHub falls back to the lowercased fragment; so do we.
  let lower = lowered.get(anchors);
  if (!lower) {
    lower = new Set();
    for (const a of anchors) lower.add(a.toLowerCase());
    lowered.set(anchors, lower);
  }
  return lower.has(fragment.toLowerCase());
}

/**
 * Checks links against the workspace. `links` are parseMarkdown's, `file` is
 * the resolved path of the document, `anchors` its anchors. Each link gets
 * `status` (`ok`, `broken`, `unchecked`) and, where it applies, `reason`,
 * `resolved` (the guest path a relative link leads to) and `suggestion`.
 */
export function checkLinks(links, file, anchors) {
  const dir = kit.dirname(file);
  const targets = new Map(); // resolved path -> { type } | { error }
  const documents = new Map(); // resolved path -> { anchors, lines } | { error }
  const targetInfo = (path) => {
    if (!targets.has(path)) {
      try {
        targets.set(path, { type: kit.statPath(path).type });
      } catch (err) {
        if (!(err instanceof kit.FileError)) throw err;
        targets.set(path, { error: err.code });
      }
    }
    return targets.get(path);
  };
  const documentInfo = (path) => {
    if (!documents.has(path)) {
      try {
        const text = kit.readTextFile(path, { maxBytes: MAX_FILE_BYTES });
        const doc = isMarkdown(path) ? parseMarkdown(text, { links: false }) : undefined;
        documents.set(path, { anchors: doc?.anchors, lines: countLines(text) });
      } catch (err) {
        if (!(err instanceof kit.FileError)) throw err;
        documents.set(path, { error: err.code });
      }
    }
    return documents.get(path);
  };

  let suggestionsLeft = MAX_SUGGESTIONS;
  const suggest = (fragment, set) => {
    if (suggestionsLeft <= 0) return {};
    suggestionsLeft--;
    const suggestion = suggestAnchor(fragment, set);
    return suggestion ? { suggestion: `#${suggestion}` } : {};
  };

  return links.map((link) => {
    const kind = classify(link.target);
    const out = { ...link, kind };
    if (kind === 'external') return { ...out, status: 'unchecked', reason: 'external' };
    if (kind === 'anchor') {
      const fragment = decode(link.target.slice(1));
      if (fragment === '' || hasAnchor(anchors, fragment)) return { ...out, status: 'ok' };
      return { ...out, status: 'broken', reason: 'missing_anchor', ...suggest(fragment, anchors) };
    }

    const { path, fragment } = splitTarget(link.target);
    if (path === '') {
      if (fragment === undefined) return { ...out, status: 'broken', reason: 'empty_target' };
      // `?query#x`: the document itself.
      if (fragment === '' || hasAnchor(anchors, fragment)) return { ...out, status: 'ok', resolved: file };
      return { ...out, status: 'broken', reason: 'missing_anchor', resolved: file, ...suggest(fragment, anchors) };
    }
    // GitHub resolves `/x` from the repository's root; here, from the
    // initial working directory (the workspace).
    const lookup = path.startsWith('/') ? kit.resolvePath(path.slice(1)) : kit.resolvePath(path, dir);
    const target = targetInfo(lookup);
    const at = { ...out, resolved: lookup };
    if (target.error === 'not_granted') return { ...at, status: 'unchecked', reason: 'outside_workspace' };
    if (target.error === 'not_found' || target.error === 'not_a_directory') return { ...at, status: 'broken', reason: 'missing_file' };
    if (target.error) return { ...at, status: 'unchecked', reason: 'unreadable' };
    if (fragment === undefined || fragment === '') return { ...at, status: 'ok' };
    if (target.type !== 'file') return { ...at, status: 'unchecked', reason: 'anchor_not_checked' };

    const doc = documentInfo(lookup);
    if (doc.error) return { ...at, status: 'unchecked', reason: 'unreadable' };
    if (doc.anchors) {
      if (hasAnchor(doc.anchors, fragment)) return { ...at, status: 'ok' };
      return { ...at, status: 'broken', reason: 'missing_anchor', ...suggest(fragment, doc.anchors) };
    }
    const lines = LINE_ANCHOR.exec(fragment);
    if (lines) {
      const last = Math.max(Number(lines[1]), Number(lines[2] ?? 0));
      return last >= 1 && last <= doc.lines
        ? { ...at, status: 'ok' }
        : { ...at, status: 'broken', reason: 'missing_line' };
    }
    return { ...at, status: 'unchecked', reason: 'anchor_not_checked' };
  });
}
