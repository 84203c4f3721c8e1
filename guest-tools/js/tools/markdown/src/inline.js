// Inline Markdown: the links, images, autolinks and raw HTML of a block of
// text (a paragraph, a heading), and its plain text.
//
// `scanInline(text, definitions)` returns tokens:
//   { type: 'text', value }
//   { type: 'code', value }                          a code span
//   { type: 'delim', char, count, canOpen, canClose } a run of * _ ~
//   { type: 'link', image, syntax, target, title, label, children, start, end }
//       syntax: 'inline' [t](x), 'reference' [t][l] [t][] [t], with `label`
//   { type: 'autolink', target, syntax, start, end }  <https://x>, bare https://x and www.x
//   { type: 'html', tag, attrs, closing, start }      a raw HTML tag
//   { type: 'break' }                                 a line break inside the block
//   { type: 'undefined_reference', label, text, start } [t][l] with no definition of l
// where `start`/`end` are offsets into `text`. It follows CommonMark and
// GitHub's extensions where links are concerned (nested brackets, balanced
// parentheses, <destinations>, titles, escapes, entities, code spans hide
// everything, images inside links); emphasis is only resolved as far as
// plain text needs (`plainText`).

import { decodeEntities } from './entities.js';

const ASCII_PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
// A link's text is looked for up to this far (a bound on the work an
// unmatched `[` costs).
const MAX_LINK_TEXT = 4000;
const MAX_LABEL = 999;

function isAsciiPunct(ch) {
  return ch !== '' && ASCII_PUNCT.includes(ch);
}

function isWhitespace(ch) {
  return ch === '' || ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\f' || ch === '\u00a0' || ch === '\u3000' || (ch >= '\u2000' && ch <= '\u200a');
}

function isPunct(ch) {
  if (isAsciiPunct(ch)) return true;
  if (ch === '') return false;
  const c = ch.codePointAt(0);
  // General punctuation, CJK punctuation, Latin-1 punctuation and the like:
  // enough for the flanking rules of emphasis (the engine has no \p{P}).
  return (c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205e) || (c >= 0x2e00 && c <= 0x2e7f) || (c >= 0x3001 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) || (c >= 0xff01 && c <= 0xff0f) || c === 0xa1 || c === 0xa7 || c === 0xab || c === 0xb6 || c === 0xb7 || c === 0xbb || c === 0xbf;
}

/** Label matching as CommonMark does it: trimmed, inner whitespace collapsed, case-folded. */
export function normalizeLabel(label) {
  return label.trim().replace(/[ \t\r\n]+/g, ' ').toLowerCase().toUpperCase().toLowerCase();
}

/** Backslash escapes and character references of a link destination or title. */
export function unescapeString(s) {
  return decodeEntities(s.replace(/\\([!-/:-@[-`{-~])/g, '$1'));
}

const AUTOLINK_URI = /<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>\u0000-\u001f]*)>/y;
const AUTOLINK_EMAIL = /<([A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)>/y;
const HTML_OPEN = /<([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*)\s*\/?>/y;
const HTML_CLOSE = /<\/([A-Za-z][A-Za-z0-9-]*)\s*>/y;
const HTML_COMMENT = /<!--[\s\S]*?-->/y;
const HTML_OTHER = /<\?[\s\S]*?\?>|<![A-Za-z][^>]*>|<!\[CDATA\[[\s\S]*?\]\]>/y;
const ATTRIBUTE = /([A-Za-z_:][A-Za-z0-9_.:-]*)(?:\s*=\s*(?:([^\s"'=<>`]+)|'([^']*)'|"([^"]*)"))?/g;
// What a destination holds but spaces, controls, parentheses and escapes.
const PLAIN_DESTINATION = /[^ \t\n\u0000-\u001f()\\]*/y;
const BARE_URL = /(?:https?:\/\/|www\.)[^\s<]*/iy;
// Where anything but plain text may start: scanning jumps from one to the
// next (a bare URL only counts at the start of a word).
const SPECIAL = /[\\\n`<[!*_~]|(?<![^\s*_~(])(?:[hH][tT][tT][pP][sS]?:\/\/|[wW][wW][wW]\.)/g;

/** The attributes of an HTML tag's attribute text, names lowercased. */
export function parseAttributes(text) {
  const attrs = {};
  for (const m of text.matchAll(ATTRIBUTE)) {
    const name = m[1].toLowerCase();
    if (!(name in attrs)) attrs[name] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return attrs;
}

/** Matches `re` (sticky) at `pos` in `text`, or null. */
function at(re, text, pos) {
  re.lastIndex = pos;
  return re.exec(text);
}

// The end of the code span opened by the backtick run at `pos` (length
// `n`): [contentStart, contentEnd, end], or null when it is never closed.
function codeSpan(text, pos, n) {
  let i = pos + n;
  while (i < text.length) {
    const j = text.indexOf('`', i);
    if (j < 0) return null;
    let k = j;
    while (text[k] === '`') k++;
    if (k - j === n) return [pos + n, j, k];
    i = k;
  }
  return null;
}

function codeSpanValue(raw) {
  const s = raw.replace(/\n/g, ' ');
  return s.length > 1 && s[0] === ' ' && s[s.length - 1] === ' ' && s.trim() !== '' ? s.slice(1, -1) : s;
}

// The `]` closing the link text opened at `open` (the `[`), or -1.
function closingBracket(text, open) {
  let depth = 0;
  const limit = Math.min(text.length, open + MAX_LINK_TEXT);
  for (let i = open + 1; i < limit; i++) {
    const ch = text[i];
    if (ch === '\\') {
      i++;
    } else if (ch === '`') {
      let n = 1;
      while (text[i + n] === '`') n++;
      const span = codeSpan(text, i, n);
      i = span ? span[2] - 1 : i + n - 1;
    } else if (ch === '<') {
      // An autolink or an HTML tag hides its brackets.
      const m = at(AUTOLINK_URI, text, i) || at(HTML_OPEN, text, i);
      if (m) i += m[0].length - 1;
    } else if (ch === '[') {
      depth++;
    } else if (ch === ']') {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

function skipSpaces(text, i) {
  let newlines = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === ' ' || ch === '\t') i++;
    else if (ch === '\n' && newlines === 0) {
      newlines++;
      i++;
    } else break;
  }
  return i;
}

// `(destination "title")` starting after the `(` at `pos`:
// { target, title, end } (end: after the `)`), or null.
function inlineDestination(text, pos) {
  let i = skipSpaces(text, pos);
  let target = '';
  if (text[i] === '<') {
    let j = i + 1;
    while (j < text.length && text[j] !== '>' && text[j] !== '\n' && text[j] !== '<') {
      j += text[j] === '\\' ? 2 : 1;
    }
    if (text[j] !== '>') return null;
    target = text.slice(i + 1, j);
    i = j + 1;
  } else {
    let depth = 0;
    const start = i;
    while (i < text.length) {
      // Ordinary characters in one step (the engine interprets this loop).
      PLAIN_DESTINATION.lastIndex = i;
      PLAIN_DESTINATION.test(text);
      i = PLAIN_DESTINATION.lastIndex;
      if (i >= text.length) break;
      const ch = text[i];
      if (ch === '\\' && isAsciiPunct(text[i + 1] ?? '')) {
        i += 2;
        continue;
      }
      if (ch === ' ' || ch === '\t' || ch === '\n' || ch < ' ') break;
      if (ch === '(') depth++;
      if (ch === ')') {
        if (depth === 0) break;
        depth--;
      }
      i++;
    }
    if (depth !== 0) return null;
    target = text.slice(start, i);
  }
  const afterTarget = i;
  i = skipSpaces(text, i);
  let title;
  const opener = text[i];
  if ((opener === '"' || opener === "'" || opener === '(') && i > afterTarget) {
    const closer = opener === '(' ? ')' : opener;
    let j = i + 1;
    while (j < text.length && text[j] !== closer) {
      if (opener === '(' && text[j] === '(') return null;
      j += text[j] === '\\' ? 2 : 1;
    }
    if (j >= text.length) return null;
    title = unescapeString(text.slice(i + 1, j));
    i = skipSpaces(text, j + 1);
  }
  if (text[i] !== ')') return null;
  return { target: unescapeString(target), title, end: i + 1 };
}

// The text and label of a `[label]` at `pos` (the `[`): { label, end }, or null.
function referenceLabel(text, pos) {
  for (let i = pos + 1; i < text.length && i - pos <= MAX_LABEL + 1; i++) {
    const ch = text[i];
    if (ch === '\\') i++;
    else if (ch === '[') return null;
    else if (ch === ']') return { label: text.slice(pos + 1, i), end: i + 1 };
  }
  return null;
}

// A bare URL (GitHub's autolink extension) at `pos`: its length, trailing
// punctuation left out, or 0.
function bareUrl(text, pos) {
  const m = at(BARE_URL, text, pos);
  if (!m) return 0;
  let url = m[0];
  for (;;) {
    const last = url[url.length - 1];
    if ('?!.,:*_~\'"'.includes(last)) {
      url = url.slice(0, -1);
    } else if (last === ')') {
      const opens = url.split('(').length - 1;
      const closes = url.split(')').length - 1;
      if (closes <= opens) break;
      url = url.slice(0, -1);
    } else if (last === ';') {
      const entity = /&[A-Za-z0-9]+;$/.exec(url);
      if (!entity) break;
      url = url.slice(0, entity.index);
    } else {
      break;
    }
  }
  // A domain with a dot, after the scheme or `www.`.
  const host = url.replace(/^https?:\/\//i, '').split(/[/?#]/)[0];
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+(:\d+)?$/.test(host) && !/^www\.[A-Za-z0-9_-]+/i.test(url)) return 0;
  return url.length;
}

/**
 * The inline tokens of `text` (see the top of this module). `definitions`
 * maps normalized labels to `{ target, title }`.
 */
export function scanInline(text, definitions, base = 0) {
  const tokens = [];
  let buf = '';
  const flush = () => {
    if (buf) tokens.push({ type: 'text', value: decodeEntities(buf) });
    buf = '';
  };
  let i = 0;
  while (i < text.length) {
    SPECIAL.lastIndex = i;
    const special = SPECIAL.exec(text);
    if (!special) {
      buf += text.slice(i);
      break;
    }
    if (special.index > i) {
      buf += text.slice(i, special.index);
      i = special.index;
    }
    const ch = text[i];
    if (ch === '\\') {
      const next = text[i + 1];
      if (next !== undefined && isAsciiPunct(next)) {
        // An escaped character is literal text (and never an entity).
        flush();
        tokens.push({ type: 'text', value: next });
        i += 2;
        continue;
      }
      buf += ch;
      i++;
      continue;
    }
    if (ch === '\n') {
      flush();
      tokens.push({ type: 'break' });
      i++;
      continue;
    }
    if (ch === '`') {
      let n = 1;
      while (text[i + n] === '`') n++;
      const span = codeSpan(text, i, n);
      if (span) {
        flush();
        tokens.push({ type: 'code', value: codeSpanValue(text.slice(span[0], span[1])) });
        i = span[2];
      } else {
        buf += text.slice(i, i + n);
        i += n;
      }
      continue;
    }
    if (ch === '<') {
      let m;
      if ((m = at(AUTOLINK_URI, text, i))) {
        flush();
        tokens.push({ type: 'autolink', syntax: 'autolink', target: m[1], start: base + i, end: base + i + m[0].length });
        i += m[0].length;
        continue;
      }
      if ((m = at(AUTOLINK_EMAIL, text, i))) {
        flush();
        tokens.push({ type: 'autolink', syntax: 'autolink', target: `mailto:${m[1]}`, text: m[1], start: base + i, end: base + i + m[0].length });
        i += m[0].length;
        continue;
      }
      if ((m = at(HTML_COMMENT, text, i)) || (m = at(HTML_OTHER, text, i))) {
        flush();
        i += m[0].length;
        continue;
      }
      if ((m = at(HTML_OPEN, text, i))) {
        flush();
        tokens.push({ type: 'html', tag: m[1].toLowerCase(), attrs: parseAttributes(m[2]), closing: false, start: base + i });
        i += m[0].length;
        continue;
      }
      if ((m = at(HTML_CLOSE, text, i))) {
        flush();
        tokens.push({ type: 'html', tag: m[1].toLowerCase(), attrs: {}, closing: true, start: base + i });
        i += m[0].length;
        continue;
      }
    }
    if (ch === '[' || (ch === '!' && text[i + 1] === '[')) {
      const image = ch === '!';
      const open = image ? i + 1 : i;
      const link = tryLink(text, open, image, definitions, base);
      if (link) {
        flush();
        if (link.type === 'link') {
          link.start = base + i;
          tokens.push(link);
          i = link.end - base;
          continue;
        }
        // An undefined reference: reported, and the brackets stay text.
        tokens.push(link);
        buf += text.slice(i, open + 1);
        i = open + 1;
        continue;
      }
      buf += ch;
      i++;
      continue;
    }
    if (ch === '*' || ch === '_' || ch === '~') {
      let n = 1;
      while (text[i + n] === ch) n++;
      const before = i > 0 ? text[i - 1] : '';
      const after = text[i + n] ?? '';
      const left = !isWhitespace(after) && (!isPunct(after) || isWhitespace(before) || isPunct(before));
      const right = !isWhitespace(before) && (!isPunct(before) || isWhitespace(after) || isPunct(after));
      let canOpen = left;
      let canClose = right;
      if (ch === '_') {
        canOpen = left && (!right || isPunct(before));
        canClose = right && (!left || isPunct(after));
      }
      if (ch === '~' && n > 2) {
        canOpen = false;
        canClose = false;
      }
      flush();
      tokens.push({ type: 'delim', char: ch, count: n, canOpen, canClose });
      i += n;
      continue;
    }
    if (ch === 'h' || ch === 'H' || ch === 'w' || ch === 'W') {
      const n = bareUrl(text, i);
      if (n > 0) {
        flush();
        const url = text.slice(i, i + n);
        tokens.push({ type: 'autolink', syntax: 'bare_url', target: url, start: base + i, end: base + i + n });
        i += n;
        continue;
      }
    }
    buf += ch;
    i++;
  }
  flush();
  return tokens;
}

// A link or image whose text opens at `open` (the `[`): a link token, an
// undefined-reference token, or null.
function tryLink(text, open, image, definitions, base) {
  const close = closingBracket(text, open);
  if (close < 0) return null;
  const inner = text.slice(open + 1, close);
  const next = text[close + 1];
  if (next === '(') {
    const dest = inlineDestination(text, close + 2);
    if (dest) {
      return {
        type: 'link',
        image,
        syntax: 'inline',
        target: dest.target,
        title: dest.title,
        children: scanInline(inner, definitions, base + open + 1),
        end: base + dest.end,
      };
    }
  }
  if (next === '[') {
    const ref = referenceLabel(text, close + 1);
    if (ref) {
      const label = ref.label.trim() === '' ? inner : ref.label;
      const def = definitions.get(normalizeLabel(label));
      if (def) {
        return {
          type: 'link',
          image,
          syntax: 'reference',
          label: normalizeLabel(label),
          target: def.target,
          title: def.title,
          children: scanInline(inner, definitions, base + open + 1),
          end: base + ref.end,
        };
      }
      if (ref.label.trim() !== '' && !ref.label.startsWith('^') && !definitions.has(normalizeLabel(inner))) {
        return { type: 'undefined_reference', label: ref.label, text: inner, start: base + open - (image ? 1 : 0) };
      }
      // `[text][]` or `[text][label]` with no such definition: `[text]`
      // may still be a shortcut reference, below.
    }
  }
  // A shortcut reference, `[label]`. Footnotes (`[^1]`) are not links.
  if (inner.trim() !== '' && !inner.startsWith('^') && inner.length <= MAX_LABEL) {
    const def = definitions.get(normalizeLabel(inner));
    if (def) {
      return {
        type: 'link',
        image,
        syntax: 'reference',
        label: normalizeLabel(inner),
        target: def.target,
        title: def.title,
        children: scanInline(inner, definitions, base + open + 1),
        end: base + close + 1,
      };
    }
  }
  return null;
}

/**
 * The plain text of tokens, as a reader sees it: emphasis markers that pair
 * up removed, code spans' content, link text, images' alternative text
 * (unless `images` is false, as in GitHub's heading anchors), no HTML tags,
 * line breaks as spaces.
 */
export function plainText(tokens, { images = true } = {}) {
  // Pair emphasis delimiters (CommonMark's process, without the rule of 3):
  // a closer takes the nearest opener of the same character; both lose the
  // characters they share, and openers in between can no longer open.
  const remaining = tokens.map((t) => (t.type === 'delim' ? t.count : 0));
  const openers = [];
  tokens.forEach((t, i) => {
    if (t.type !== 'delim') return;
    if (t.canClose) {
      for (let k = openers.length - 1; k >= 0; k--) {
        const o = openers[k];
        if (tokens[o].char !== t.char || remaining[o] === 0) continue;
        const used = Math.min(remaining[o], remaining[i]);
        remaining[o] -= used;
        remaining[i] -= used;
        openers.length = remaining[o] > 0 ? k + 1 : k;
        break;
      }
    }
    if (t.canOpen && remaining[i] > 0) openers.push(i);
  });
  let out = '';
  tokens.forEach((t, i) => {
    switch (t.type) {
      case 'text':
      case 'code':
        out += t.value;
        break;
      case 'delim':
        out += t.char.repeat(remaining[i]);
        break;
      case 'break':
        out += ' ';
        break;
      case 'autolink':
        out += t.text ?? t.target;
        break;
      case 'link':
        if (!t.image || images) out += plainText(t.children, { images });
        break;
      default:
        break;
    }
  });
  return out;
}
