// Counting lines and bytes: plain JavaScript, tested natively in test/.

const NEWLINE = 0x0a;

/**
 * The lines and bytes of `bytes` (a Uint8Array), as `{ lines, bytes }`. A
 * last line without a newline counts too.
 *
 * `indexOf` runs in the engine's C++: one interpreted step per line, not per
 * byte (inside a component every step costs fuel, and the engine has no JIT).
 */
export function count(bytes) {
  let lines = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, i + 1)) lines++;
  if (bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE) lines++;
  return { lines, bytes: bytes.length };
}
