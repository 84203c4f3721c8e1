import assert from 'node:assert/strict';
import { test } from 'node:test';

import { encode, keptRanges } from '../scripts/gen-slug-table.mjs';
import { keeps, slug, Slugger } from '../src/slug.js';
import { KEPT_RANGES, UNICODE_VERSION } from '../src/slug-table.js';

test('slugs as GitHub makes them', () => {
  const cases = [
    ['Hello World', 'hello-world'],
    ['  Spaces  inside ', '--spaces--inside-'],
    ['C++ & Rust: a comparison!', 'c--rust-a-comparison'],
    ['snake_case and kebab-case', 'snake_case-and-kebab-case'],
    ['fs.readFile(path[, options])', 'fsreadfilepath-options'],
    ['Version 1.95 (2026-04-16)', 'version-195-2026-04-16'],
    ['Ünïcödé Straße', 'ünïcödé-straße'],
    ['日本語の見出し', '日本語の見出し'],
    ['Привет, мир', 'привет-мир'],
    ['🚀 Launch', '-launch'],
    ['Ⓐ circled', 'ⓐ-circled'], // Alphabetic, though a symbol
    ['½ and ²', '-and-'], // other numbers go
    ['tab\there', 'tabhere'],
  ];
  for (const [text, expected] of cases) assert.equal(slug(text), expected, text);
});

test('repeated headings get -1, -2, and a taken -1 is skipped', () => {
  const s = new Slugger();
  assert.deepEqual(
    ['A', 'A', 'A-1', 'A', 'B'].map((t) => s.slug(t)),
    ['a', 'a-1', 'a-1-1', 'a-2', 'b'],
  );
});

// Node's Unicode data is the reference only when it is the table's version.
const otherUnicode = process.versions.unicode !== UNICODE_VERSION && `Node's Unicode is ${process.versions.unicode}, the table's ${UNICODE_VERSION}`;

test('the generated table is what the script makes', { skip: otherUnicode }, () => {
  assert.equal(encode(keptRanges()), KEPT_RANGES);
});

test('the table agrees with Unicode properties on samples', { skip: otherUnicode }, () => {
  const keep = /[\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\p{Alphabetic}\- ]/u;
  for (let cp = 0; cp < 0x30000; cp += 97) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    assert.equal(keeps(cp), keep.test(String.fromCodePoint(cp)), `U+${cp.toString(16)}`);
  }
});
