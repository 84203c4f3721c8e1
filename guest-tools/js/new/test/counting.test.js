// Unit tests of the counting, natively: `node --test` (Node 20 or later),
// from the project's directory.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { count } from '../src/counting.js';

const bytes = (text) => new TextEncoder().encode(text);

test('counts lines and bytes', () => {
  assert.deepEqual(count(bytes('')), { lines: 0, bytes: 0 });
  assert.deepEqual(count(bytes('one\ntwo\n')), { lines: 2, bytes: 8 });
  assert.deepEqual(count(bytes('one\ntwo')), { lines: 2, bytes: 7 }); // a last line without a newline
  assert.deepEqual(count(bytes('\n\n')), { lines: 2, bytes: 2 });
  assert.deepEqual(count(bytes('é\n')), { lines: 1, bytes: 3 }); // bytes, not characters
});
