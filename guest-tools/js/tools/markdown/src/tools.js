// The `markdown` tools: `md_outline` and `md_links`, their JSON Schemas and
// `TOOLSET`.
//
// The host validates the arguments against the input schema before a tool
// runs; the checks here repeat what the code relies on, so the functions
// are also safe to call directly (the tests do).

import * as kit from '../../../kit/index.js';

import { checkLinks, classify, MAX_FILE_BYTES } from './links.js';
import { parseMarkdown } from './markdown.js';
import { renderLinks, renderOutline } from './render.js';

// ── schemas ───────────────────────────────────────────────────────────────

const PATH = {
  type: 'string',
  minLength: 1,
  description:
    'The Markdown file. Relative paths are relative to the working directory (the workspace), e.g. `docs/guide.md`.',
};

const LINE = { type: 'integer', minimum: 1, description: 'Line number, from 1.' };

const HEADING = kit.objectSchema(
  {
    level: { type: 'integer', minimum: 1, maximum: 6, description: '1 for `#`, 2 for `##`, ...' },
    text: { type: 'string', description: 'The heading as text, Markdown markup removed.' },
    line: LINE,
    anchor: {
      type: 'string',
      description: 'The anchor GitHub gives the heading: link to it as `#anchor` (or `file.md#anchor`).',
    },
    style: { enum: ['atx', 'setext'], description: 'atx: `# Title`; setext: a title underlined with === or ---.' },
    children: { type: 'array', items: { $ref: '#/$defs/heading' }, description: 'The headings under this one.' },
  },
  ['level', 'text', 'line', 'anchor', 'style', 'children'],
  { root: false },
);

const OUTLINE_INPUT = kit.objectSchema(
  {
    path: PATH,
    max_level: {
      type: 'integer',
      minimum: 1,
      maximum: 6,
      default: 6,
      description: 'Leave out headings deeper than this level (2: only `#` and `##`).',
    },
  },
  ['path'],
);

const OUTLINE_OUTPUT = kit.objectSchema(
  {
    path: { type: 'string', description: 'The path, as given.' },
    lines: { type: 'integer', minimum: 0, description: 'Lines in the file.' },
    count: { type: 'integer', minimum: 0, description: 'Headings in `headings`, at every depth.' },
    headings: {
      type: 'array',
      items: { $ref: '#/$defs/heading' },
      description: 'The heading tree: each heading holds the deeper headings after it.',
    },
  },
  ['path', 'lines', 'count', 'headings'],
  { defs: { heading: HEADING } },
);

const KINDS = ['relative', 'anchor', 'external'];
const STATUSES = ['ok', 'broken', 'unchecked'];
const REASONS = [
  'missing_file',
  'missing_anchor',
  'missing_line',
  'empty_target',
  'external',
  'outside_workspace',
  'unreadable',
  'anchor_not_checked',
];

const LINK = kit.objectSchema(
  {
    line: LINE,
    kind: {
      enum: KINDS,
      description: 'relative: a file in the workspace (maybe with #anchor); anchor: #heading in this file; external: a URL.',
    },
    syntax: {
      enum: ['inline', 'reference', 'autolink', 'bare_url', 'html'],
      description: 'inline [t](x); reference [t][label], [t][], [t]; autolink <x>; bare_url https://x or www.x; html <a href>, <img src>.',
    },
    image: { type: 'boolean', description: 'An image (![alt](src), <img src>) rather than a link.' },
    text: { type: 'string', description: "The link's text, or an image's alternative text." },
    target: { type: 'string', description: 'The destination, as written (escapes and entities decoded).' },
    label: { type: 'string', description: 'Reference links: the (normalized) label of the definition used.' },
    status: {
      enum: STATUSES,
      description: 'With check: ok, broken, or unchecked (external URLs are never fetched).',
    },
    reason: {
      enum: REASONS,
      description:
        'Why broken (missing_file, missing_anchor, missing_line, empty_target) or unchecked (external, outside_workspace, unreadable, anchor_not_checked).',
    },
    resolved: { type: 'string', description: 'Relative links, with check: the path the link leads to.' },
    suggestion: { type: 'string', description: 'A missing anchor: the closest existing one, as `#anchor`.' },
  },
  ['line', 'kind', 'syntax', 'image', 'text', 'target'],
  { root: false },
);

const LINKS_INPUT = kit.objectSchema(
  {
    path: PATH,
    check: {
      type: 'boolean',
      default: false,
      description:
        'Also check every relative link: does the file exist (relative to the Markdown file), and does its #anchor exist among the target\'s headings. External URLs are listed, never fetched.',
    },
  },
  ['path'],
);

const COUNT = { type: 'integer', minimum: 0 };

const LINKS_OUTPUT = kit.objectSchema(
  {
    path: { type: 'string', description: 'The path, as given.' },
    lines: { type: 'integer', minimum: 0, description: 'Lines in the file.' },
    checked: { type: 'boolean', description: 'Whether links were checked.' },
    counts: kit.objectSchema(
      { total: COUNT, relative: COUNT, anchor: COUNT, external: COUNT, images: COUNT, broken: COUNT },
      ['total', 'relative', 'anchor', 'external', 'images'],
      { root: false, description: 'broken: only when checked.' },
    ),
    links: { type: 'array', items: LINK, description: 'Every link and image, in document order.' },
    undefined_references: {
      type: 'array',
      description: '[text][label] where no definition of label exists: rendered as plain text, so probably a mistake.',
      items: kit.objectSchema(
        { line: LINE, label: { type: 'string' }, text: { type: 'string' } },
        ['line', 'label', 'text'],
        { root: false },
      ),
    },
  },
  ['path', 'lines', 'checked', 'counts', 'links', 'undefined_references'],
);

// ── tools ─────────────────────────────────────────────────────────────────

function readDocument(args, options) {
  if (typeof args.path !== 'string' || args.path === '') {
    throw kit.ToolError.invalidArguments('path must be a non-empty string');
  }
  const text = kit.readTextFile(args.path, { maxBytes: MAX_FILE_BYTES });
  return parseMarkdown(text, options);
}

function headingTree(headings, maxLevel) {
  const roots = [];
  const stack = [];
  let count = 0;
  for (const h of headings) {
    if (h.level > maxLevel) continue;
    const node = { level: h.level, text: h.text, line: h.line, anchor: h.anchor, style: h.style, children: [] };
    while (stack.length && stack[stack.length - 1].level >= h.level) stack.pop();
    (stack.length ? stack[stack.length - 1].children : roots).push(node);
    stack.push(node);
    count++;
  }
  return { roots, count };
}

function outline(args) {
  const maxLevel = args.max_level ?? 6;
  if (!Number.isInteger(maxLevel) || maxLevel < 1 || maxLevel > 6) {
    throw kit.ToolError.invalidArguments('max_level must be an integer from 1 to 6');
  }
  const doc = readDocument(args, { links: false });
  const { roots, count } = headingTree(doc.headings, maxLevel);
  return { path: args.path, lines: doc.lines, count, headings: roots };
}

function links(args) {
  const check = args.check ?? false;
  if (typeof check !== 'boolean') throw kit.ToolError.invalidArguments('check must be true or false');
  const doc = readDocument(args);
  const listed = check
    ? checkLinks(doc.links, kit.resolvePath(args.path), doc.anchors)
    : doc.links.map((l) => ({ ...l, kind: classify(l.target) }));
  const counts = { total: listed.length, relative: 0, anchor: 0, external: 0, images: 0 };
  for (const l of listed) {
    counts[l.kind]++;
    if (l.image) counts.images++;
  }
  if (check) counts.broken = listed.filter((l) => l.status === 'broken').length;
  return {
    path: args.path,
    lines: doc.lines,
    checked: check,
    counts,
    links: listed.map(linkValue),
    undefined_references: doc.undefinedReferences,
  };
}

// A link in the value: the schema's fields, in the schema's order.
function linkValue(l) {
  const out = { line: l.line, kind: l.kind, syntax: l.syntax, image: l.image, text: l.text, target: l.target };
  for (const key of ['label', 'status', 'reason', 'resolved', 'suggestion']) {
    if (l[key] !== undefined) out[key] = l[key];
  }
  return out;
}

const ANNOTATIONS = { readOnly: true, idempotent: true };
const PATHS = [{ pointer: '/path', access: 'read' }];

export const MD_OUTLINE = new kit.Tool({
  name: 'md_outline',
  title: 'Markdown outline',
  description:
    'The heading tree of a Markdown file: each heading\'s level, text, line and anchor (the #fragment GitHub gives it, for links). ATX (#) and underlined (setext) headings; code blocks, HTML comments and front matter are skipped.',
  inputSchema: OUTLINE_INPUT,
  outputSchema: OUTLINE_OUTPUT,
  annotations: ANNOTATIONS,
  paths: PATHS,
  execute: outline,
  render: renderOutline,
});

export const MD_LINKS = new kit.Tool({
  name: 'md_links',
  title: 'Markdown links',
  description:
    'Every link and image in a Markdown file (inline, reference, autolinks, bare URLs, HTML <a>/<img>) with its line, text, target and kind (relative file, #anchor, external URL). With check: true, also whether each relative file exists and each #anchor exists among the target file\'s headings, with a suggestion for misspelt anchors. External URLs are listed, never fetched.',
  inputSchema: LINKS_INPUT,
  outputSchema: LINKS_OUTPUT,
  annotations: ANNOTATIONS,
  paths: PATHS,
  execute: links,
  render: renderLinks,
});

export const TOOLSET = new kit.Toolset([MD_OUTLINE, MD_LINKS]);
