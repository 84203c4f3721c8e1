// A Markdown reader for outlines and links: the block structure of a
// document (CommonMark with GitHub's extensions), as far as headings, links
// and anchors need it.
//
// `parseMarkdown(source)` returns
//   {
//     lines,                 the number of lines
//     headings: [{ level, text, line, anchor, style: 'atx' | 'setext' }],
//     links: [{ line, text, target, image, syntax, label? }],
//     anchors: Set,          heading anchors plus HTML `id`s and `<a name>`s
//     undefinedReferences: [{ line, label, text }],
//   }
// Line numbers count from 1.
//
// What it knows: ATX (`# x`) and setext (underlined) headings; fenced code
// blocks (``` and ~~~, inside block quotes and list items too) and indented
// code blocks, whose content is never read as Markdown; HTML blocks and
// comments (their `href`, `src`, `id` and `name` attributes still count);
// YAML and TOML front matter; block quotes; link reference definitions;
// every inline form of links (see inline.js). What it does not: it does not
// build list or block-quote trees (it tracks just enough of them to tell
// list content from indented code and a setext underline from a thematic
// break), and a link reference definition must fit on one line.

import { normalizeLabel, parseAttributes, plainText, scanInline, unescapeString } from './inline.js';
import { Slugger } from './slug.js';

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const ATX_ONLY_HASHES = /^#+$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const THEMATIC_BREAK = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const FENCE_OPEN = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const DEFINITION = /^ {0,3}\[((?:[^\\[\]]|\\.){1,999})\]:[ \t]*(?:<((?:[^<>\n\\]|\\.)*)>|(\S+))(?:[ \t]+("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)))?[ \t]*$/;
const HTML_RAW = /^ {0,3}<(pre|script|style|textarea)(?:\s|>|$)/i;
const HTML_BLOCK_TAGS = new Set(
  ('address article aside base basefont blockquote body caption center col colgroup dd details dialog dir div dl dt ' +
    'fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html iframe legend li link ' +
    'main menu menuitem nav noframes ol optgroup option p param search section summary table tbody td tfoot th thead ' +
    'title tr track ul').split(' '),
);
const HTML_BLOCK_START = /^ {0,3}<\/?([A-Za-z][A-Za-z0-9-]*)(?:\s|\/?>|$)/;
const HTML_LONE_TAG = /^ {0,3}(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*\s*\/?>|<\/[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*$/;
const HTML_TAGS = /<([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*)\s*\/?>/g;

/** The columns of leading whitespace (a tab reaches the next multiple of 4). */
function indentation(line) {
  let cols = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 32) cols++;
    else if (c === 9) cols += 4 - (cols % 4);
    else break;
  }
  return cols;
}

/** The index of the first character that is not a space or a tab. */
function firstNonBlank(line) {
  let i = 0;
  while (i < line.length && (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9)) i++;
  return i;
}


/** Up to `max` block-quote markers off `line`: { depth, rest }. */
function stripQuotes(line, max = Infinity) {
  let depth = 0;
  let rest = line;
  while (depth < max) {
    const k = firstNonBlank(rest);
    if (k > 3 || rest[k] !== '>') break;
    const after = rest[k + 1];
    rest = rest.slice(after === ' ' || after === '\t' ? k + 2 : k + 1);
    depth++;
  }
  return { depth, rest };
}

/**
 * Whether `line` starts a list item at `k` (its first non-blank): `-`, `+`,
 * `*` or 1 to 9 digits and `.` or `)`, then a space, a tab or the end.
 * (By hand: a regular expression costs the engine more than the line.)
 */
function isListMarker(line, k) {
  let i = k;
  const c = line[i];
  if (c === '-' || c === '+' || c === '*') {
    i++;
  } else {
    while (i < line.length && i - k < 9 && line[i] >= '0' && line[i] <= '9') i++;
    if (i === k || (line[i] !== '.' && line[i] !== ')')) return false;
    i++;
  }
  return i === line.length || line[i] === ' ' || line[i] === '\t';
}

function isBlank(s) {
  return firstNonBlank(s) === s.length;
}

// Closing fences, by character and minimum length.
const closingFences = new Map();
function closingFence(char, length) {
  const key = `${char}${length}`;
  let re = closingFences.get(key);
  if (!re) {
    re = new RegExp(`^[ \\t]*${char === '`' ? '`' : '~'}{${length},}[ \\t]*$`);
    closingFences.set(key, re);
  }
  return re;
}

// Splits `source` into lines (LF, CRLF or CR), without the terminators.
function splitLines(source) {
  if (source === '') return [];
  const lines = source.includes('\r') ? source.split(/\r\n|\r|\n/) : source.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// The number of lines of front matter (YAML `---` or TOML `+++`) at the
// start, or 0.
function frontMatter(lines) {
  const first = lines[0]?.trimEnd();
  if (first !== '---' && first !== '+++') return 0;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i].trimEnd();
    if (l === first || (first === '---' && l === '...')) return i + 1;
  }
  return 0;
}

/**
 * The HTML block `line` starts, if it starts one: `{ raw, end }`, where
 * `end` is the RegExp of the line that ends it, null when a blank line ends
 * it, undefined when it ends on this line; `raw` blocks (comments, <pre>,
 * <script>, ...) hold nothing to read. `canStartLoneTag`: a line holding
 * just a tag starts a block only outside a paragraph.
 */
function htmlBlockStart(line, canStartLoneTag) {
  const rawTag = HTML_RAW.exec(line);
  if (rawTag) {
    const end = new RegExp(`</${rawTag[1]}>`, 'i');
    return { raw: true, end: end.test(line) ? undefined : end };
  }
  const open = line.indexOf('<');
  if (line.startsWith('<!--', open)) {
    return { raw: true, end: line.includes('-->', open + 4) ? undefined : /-->/ };
  }
  if (line[open + 1] === '?' || line[open + 1] === '!') {
    const end = line[open + 1] === '?' ? /\?>/ : line.startsWith('<![CDATA[', open) ? /\]\]>/ : />/;
    return { raw: true, end: end.test(line.slice(open + 2)) ? undefined : end };
  }
  const tag = HTML_BLOCK_START.exec(line);
  if ((tag && HTML_BLOCK_TAGS.has(tag[1].toLowerCase())) || (canStartLoneTag && HTML_LONE_TAG.test(line))) {
    return { raw: false, end: null };
  }
  return undefined;
}

/**
 * The block structure of `source`: headings (with raw inline text), inline
 * chunks (paragraph text with the line of each of its lines), HTML
 * attributes, link reference definitions.
 */
function blocks(source) {
  const lines = splitLines(source);
  const headings = [];
  const chunks = []; // { text, lines: [line numbers], offsets: [line start offsets] }
  const html = []; // { tag, attrs, line }
  const definitions = new Map();

  let fence = null; // { char, length, depth }
  let htmlBlock = null; // { end: RegExp | null (a blank line ends it), depth, raw }
  let indentedCode = false;
  let para = null; // { lines: [{ text, line }], setext: bool, depth }
  let listOpen = false;
  let previousBlank = true;

  const flush = () => {
    if (!para) return;
    const texts = para.lines.map((l) => l.text);
    const offsets = [];
    let offset = 0;
    for (const t of texts) {
      offsets.push(offset);
      offset += t.length + 1;
    }
    chunks.push({ text: texts.join('\n'), lines: para.lines.map((l) => l.line), offsets });
    para = null;
  };
  const heading = (level, raw, line, style) => {
    headings.push({ level, raw, line, style });
    chunks.push({ text: raw, lines: [line], offsets: [0], heading: headings.length - 1 });
  };
  const scanHtml = (text, line) => {
    for (const m of text.matchAll(HTML_TAGS)) html.push({ tag: m[1].toLowerCase(), attrs: parseAttributes(m[2]), line });
  };

  for (let i = frontMatter(lines); i < lines.length; i++) {
    const raw = lines[i];
    const line = i + 1;

    // ── inside a fenced code block ────────────────────────────────────
    if (fence) {
      const { depth, rest } = stripQuotes(raw, fence.depth);
      if (depth < fence.depth) {
        fence = null; // the block quote holding it ended
      } else {
        const k = firstNonBlank(rest);
        if (rest[k] === fence.char && closingFence(fence.char, fence.length).test(rest)) fence = null;
        continue;
      }
    }

    const { depth, rest } = stripQuotes(raw);

    // ── inside an HTML block ──────────────────────────────────────────
    if (htmlBlock) {
      if (htmlBlock.end === null) {
        if (isBlank(rest)) {
          htmlBlock = null;
          previousBlank = true;
          continue;
        }
        scanHtml(rest, line);
        continue;
      }
      if (!htmlBlock.raw) scanHtml(rest, line);
      if (htmlBlock.end.test(rest)) htmlBlock = null;
      continue;
    }

    // ── inside an indented code block ─────────────────────────────────
    if (indentedCode) {
      if (isBlank(rest) || indentation(rest) >= 4) continue;
      indentedCode = false;
    }

    const k = firstNonBlank(rest);
    if (k === rest.length) {
      flush();
      previousBlank = true;
      continue;
    }
    const blankBefore = previousBlank;
    previousBlank = false;
    const indent = k === 0 ? 0 : indentation(rest);
    // Most lines are prose: only a line starting with one of these
    // characters can be anything else.
    const c = rest[k];

    if (para && para.depth !== depth) flush();

    if (indent >= 4 && !para && !listOpen) {
      indentedCode = true;
      continue;
    }

    // ── fenced code ───────────────────────────────────────────────────
    if ((c === '`' || c === '~') && (indent <= 3 || listOpen)) {
      const open = FENCE_OPEN.exec(rest);
      if (open && !(open[2][0] === '`' && open[3].includes('`'))) {
        flush();
        fence = { char: open[2][0], length: open[2].length, depth };
        continue;
      }
    }

    if (indent <= 3) {
      // ── ATX heading ───────────────────────────────────────────────
      const atx = c === '#' && ATX.exec(rest);
      if (atx) {
        flush();
        const content = (atx[2] ?? '').trim();
        heading(atx[1].length, ATX_ONLY_HASHES.test(content) ? '' : content, line, 'atx');
        if (indent === 0 && depth === 0) listOpen = false;
        continue;
      }

      // ── setext underline, thematic break ──────────────────────────
      const underline = (c === '=' || c === '-') && para && para.setext && SETEXT.exec(rest);
      if (underline) {
        const first = para.lines[0].line;
        const texts = para.lines.map((l) => l.text.trim());
        para = null;
        heading(underline[1][0] === '=' ? 1 : 2, texts.join('\n'), first, 'setext');
        // The heading's chunk spans the paragraph's lines.
        const chunk = chunks[chunks.length - 1];
        chunk.lines = texts.map((_, n) => first + n);
        chunk.offsets = [];
        let offset = 0;
        for (const t of texts) {
          chunk.offsets.push(offset);
          offset += t.length + 1;
        }
        continue;
      }
      if ((c === '-' || c === '*' || c === '_') && THEMATIC_BREAK.test(rest)) {
        flush();
        if (indent === 0 && depth === 0) listOpen = false;
        continue;
      }

      // ── HTML blocks ───────────────────────────────────────────────
      if (c === '<') {
        const block = htmlBlockStart(rest, !para);
        if (block) {
          flush();
          if (!block.raw) scanHtml(rest, line);
          if (block.end !== undefined) htmlBlock = { end: block.end, depth, raw: block.raw };
          continue;
        }
      }

      // ── link reference definitions ────────────────────────────────
      if (c === '[' && !para) {
        const def = DEFINITION.exec(rest);
        if (def && def[1].trim() !== '' && !def[1].startsWith('^')) {
          const label = normalizeLabel(def[1]);
          if (!definitions.has(label)) {
            const title = def[4] === undefined ? undefined : unescapeString(def[4].slice(1, -1));
            definitions.set(label, { target: unescapeString(def[2] ?? def[3]), title, line });
          }
          continue;
        }
      }
    }

    // ── list items and paragraphs ─────────────────────────────────────
    const listItem = indent <= 3 && isListMarker(rest, k);
    if (listItem) {
      flush();
      listOpen = true;
    } else if (blankBefore && indent === 0 && depth === 0) {
      listOpen = false;
    }
    if (!para) para = { lines: [], setext: !listItem, depth };
    para.lines.push({ text: k === 0 ? rest : rest.slice(k), line });
  }
  flush();
  return { lineCount: lines.length, headings, chunks, html, definitions };
}

// The line of `offset` in a chunk.
function lineAt(chunk, offset) {
  let lo = 0;
  let hi = chunk.offsets.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (chunk.offsets[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return chunk.lines[lo];
}

/**
 * Parses `source` (see the top of this module). With `links: false` only
 * headings and anchors are read (`links` and `undefinedReferences` come
 * back empty): the text of paragraphs is not scanned, which is most of the
 * work, except for the `id`s and `name`s of its HTML tags.
 */
export function parseMarkdown(source, { links: wantLinks = true } = {}) {
  const { lineCount, headings: rawHeadings, chunks, html, definitions } = blocks(source);
  const headings = rawHeadings.map((h) => ({ level: h.level, text: '', line: h.line, anchor: '', style: h.style }));
  const links = [];
  const undefinedReferences = [];
  const anchors = new Set();

  // Raw HTML: its anchors, and its links in document order. HTML blocks
  // and the text chunks never share a line, and both come in document
  // order, so merging them keeps the links in order without sorting.
  const addHtml = (tag, attrs, line) => {
    if (attrs.id) anchors.add(attrs.id);
    if (tag === 'a' && attrs.name) anchors.add(attrs.name);
    if (!wantLinks) return;
    if (tag === 'a' && attrs.href !== undefined) {
      links.push({ line, text: '', target: attrs.href, image: false, syntax: 'html' });
    } else if (tag === 'img' && attrs.src !== undefined) {
      links.push({ line, text: attrs.alt ?? '', target: attrs.src, image: true, syntax: 'html' });
    }
  };
  let nextHtml = 0;
  const htmlBefore = (line) => {
    while (nextHtml < html.length && html[nextHtml].line < line) {
      const h = html[nextHtml++];
      addHtml(h.tag, h.attrs, h.line);
    }
  };

  const visit = (chunk, tokens) => {
    for (const t of tokens) {
      if (!wantLinks && t.type !== 'html') continue;
      switch (t.type) {
        case 'link': {
          const link = { line: lineAt(chunk, t.start), text: linkText(t.children), target: t.target, image: t.image, syntax: t.syntax };
          if (t.label !== undefined) link.label = t.label;
          links.push(link);
          visit(chunk, t.children);
          break;
        }
        case 'autolink':
          links.push({ line: lineAt(chunk, t.start), text: t.text ?? t.target, target: t.target, image: false, syntax: t.syntax });
          break;
        case 'html':
          if (!t.closing) addHtml(t.tag, t.attrs, lineAt(chunk, t.start));
          break;
        case 'undefined_reference':
          undefinedReferences.push({ line: lineAt(chunk, t.start), label: t.label, text: t.text });
          break;
        default:
          break;
      }
    }
  };

  for (const chunk of chunks) {
    htmlBefore(chunk.lines[0]);
    if (!wantLinks && chunk.heading === undefined) {
      // Only the anchors of its HTML tags matter here.
      if (chunk.text.includes('<')) {
        for (const m of chunk.text.matchAll(HTML_TAGS)) {
          addHtml(m[1].toLowerCase(), parseAttributes(m[2]), lineAt(chunk, m.index));
        }
      }
      continue;
    }
    const tokens = scanInline(chunk.text, definitions);
    if (chunk.heading !== undefined) headings[chunk.heading].text = plainText(tokens, { images: false }).trim();
    visit(chunk, tokens);
  }
  htmlBefore(Infinity);

  // Anchors in document order (duplicates numbered in that order).
  const slugger = new Slugger();
  for (const h of headings) {
    h.anchor = slugger.slug(h.text);
    anchors.add(h.anchor);
  }

  return { lines: lineCount, headings, links, anchors, undefinedReferences };
}

// The plain text of a link's text (the common case, one piece of text,
// without the general walk).
function linkText(children) {
  if (children.length === 1 && children[0].type === 'text') return children[0].value.trim();
  return plainText(children).trim();
}
