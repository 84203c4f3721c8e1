// Tool failures: `ToolError`, what every failure the model sees is.

// Error codes: stable snake_case strings.
const CODE_RE = /^[a-z][a-z0-9_]*$/;

/**
 * A failure the tool reports itself (the WIT `tool-failure`).
 *
 * `code` is a stable snake_case string a model (and a program) can rely on,
 * `message` says what to do about it, `info` is optional JSON-serializable
 * detail.
 */
export class ToolError extends Error {
  constructor(code, message, info = undefined) {
    if (typeof code !== 'string' || !CODE_RE.test(code)) {
      throw new TypeError(`error code ${JSON.stringify(code)} is not snake_case`);
    }
    super(String(message));
    this.name = 'ToolError';
    this.code = code;
    this.info = info;
  }

  /** `invalid_arguments`: the arguments are well-formed but unusable. */
  static invalidArguments(message, info = undefined) {
    return new ToolError('invalid_arguments', message, info);
  }
}

/** Any exception as a `ToolError` (`internal_error` unless it is one). */
export function asToolError(err) {
  if (err instanceof ToolError) return err;
  if (err instanceof RangeError && /memory|allocation/i.test(err.message)) {
    return new ToolError('out_of_memory', 'the tool ran out of memory');
  }
  if (err instanceof Error) {
    return new ToolError('internal_error', `${err.name}: ${err.message}`);
  }
  return new ToolError('internal_error', `a non-error value was thrown: ${String(err)}`);
}
