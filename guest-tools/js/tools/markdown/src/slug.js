// Heading anchors, as GitHub makes them (github-slugger's algorithm).
//
// The text of a heading (its rendered text: markup removed, entities
// decoded) is lowercased; every character that is not a letter, mark,
// decimal or letter number, `_`, `-`, space or Alphabetic code point is
// dropped; spaces become `-`. A repeated anchor gets `-1`, `-2`, ... in
// document order.

import { KEPT_RANGES } from './slug-table.js';

// [start0, end0, start1, end1, ...], sorted.
const KEPT = (() => {
  const parts = KEPT_RANGES.split(',').map((p) => parseInt(p, 36));
  const out = new Uint32Array(parts.length);
  let prev = 0;
  for (let i = 0; i < parts.length; i += 2) {
    const start = prev + parts[i];
    const end = start + parts[i + 1];
    out[i] = start;
    out[i + 1] = end;
    prev = end;
  }
  return out;
})();

/** Whether an anchor keeps code point `cp`. */
export function keeps(cp) {
  if (cp < 0x80) {
    // The common case, without the search.
    return (cp >= 0x61 && cp <= 0x7a) || (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || cp === 0x5f || cp === 0x2d || cp === 0x20;
  }
  let lo = 0;
  let hi = KEPT.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < KEPT[2 * mid]) hi = mid - 1;
    else if (cp > KEPT[2 * mid + 1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The anchor of a heading text, before deduplication. */
export function slug(text) {
  let out = '';
  for (const ch of text.toLowerCase()) {
    const cp = ch.codePointAt(0);
    if (!keeps(cp)) continue;
    out += cp === 0x20 ? '-' : ch;
  }
  return out;
}

/** Unique anchors for the headings of one document, in order. */
export class Slugger {
  constructor() {
    this.occurrences = new Map();
  }

  /** The anchor of the next heading with text `text`. */
  slug(text) {
    const base = slug(text);
    let result = base;
    while (this.occurrences.has(result)) {
      const n = this.occurrences.get(base) + 1;
      this.occurrences.set(base, n);
      result = `${base}-${n}`;
    }
    this.occurrences.set(result, 0);
    return result;
  }
}
