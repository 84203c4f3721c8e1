// The {{name}} tool's declaration: name, schemas, annotations, paths.

import * as kit from '../../../kit/index.js'; // the kit, in the build's copy

import { count } from './counting.js';

export const COUNT = new kit.Tool({
  name: '{{name}}',
  description: 'Counts the lines and bytes of a file.',
  // The schemas the host checks calls and values against: change them here.
  inputSchema: kit.objectSchema( // additionalProperties: false
    { path: { type: 'string', minLength: 1, description: 'The file, relative to the working directory or absolute.' } },
    ['path'],
  ),
  outputSchema: kit.objectSchema(
    {
      path: { type: 'string', description: 'The file, as given.' },
      lines: { type: 'integer', minimum: 0, description: 'Newline characters, plus a last line without one.' },
      bytes: { type: 'integer', minimum: 0, description: 'Size in bytes.' },
    },
    ['path', 'lines', 'bytes'],
  ),
  // It changes nothing, and the same file gives the same answer.
  annotations: { readOnly: true, idempotent: true },
  // The host checks this argument against the policy's grants first.
  paths: [{ pointer: '/path', access: 'read' }],
  execute(args) {
    // The engine has no file API: the kit resolves the path against the
    // host's working directory (/workspace), as the host's checks did, and
    // reads it through wasi:filesystem. Failures come with stable codes
    // (not_found, is_directory, file_too_large past 16 MiB, ...).
    const { lines, bytes } = count(kit.readBytes(args.path));
    return { path: args.path, lines, bytes };
  },
  // What the model reads. Pure: it runs in a fresh instance, from the value.
  render: (args, value) => [kit.text(`${value.lines} lines, ${value.bytes} bytes in ${value.path}`)],
});

export const TOOLSET = new kit.Toolset([COUNT]);
