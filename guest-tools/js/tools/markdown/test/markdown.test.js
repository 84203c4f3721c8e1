import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseMarkdown } from '../src/markdown.js';

const headings = (md) => parseMarkdown(md).headings.map((h) => [h.level, h.text, h.line, h.anchor]);
const links = (md) => parseMarkdown(md).links.map((l) => [l.line, l.target, l.text, l.syntax, l.image]);
const md = (...lines) => lines.join('\n');

test('ATX headings: levels, closing hashes, what is not one', () => {
  assert.deepEqual(
    headings(md('# One', '## Two ##', '###   Three   #####  ', '#### Four#', '####### seven', '#hashtag', '#5 bolt', '##', '  ### Indented', '    # code')),
    [
      [1, 'One', 1, 'one'],
      [2, 'Two', 2, 'two'],
      [3, 'Three', 3, 'three'],
      [4, 'Four#', 4, 'four'],
      [2, '', 8, ''],
      [3, 'Indented', 9, 'indented'],
    ],
  );
});

test('setext headings, and a --- that is a thematic break instead', () => {
  assert.deepEqual(
    headings(md('Title', '=====', '', 'Sub title', 'on two lines', '---', '', '---', '', '- item', '---', '', 'text', '', '***')),
    [
      [1, 'Title', 1, 'title'],
      [2, 'Sub title on two lines', 4, 'sub-title-on-two-lines'],
    ],
  );
  // === without a paragraph is text.
  assert.deepEqual(headings(md('===')), []);
});

test('headings inside block quotes count', () => {
  assert.deepEqual(headings(md('> # Quoted', '> text', '> ---')), [
    [1, 'Quoted', 1, 'quoted'],
    [2, 'text', 2, 'text'],
  ]);
});

test('fenced code blocks hide headings and links', () => {
  const doc = md(
    '```sh',
    '# not a heading [no](link.md)',
    '```',
    '~~~~',
    '~~~',
    '# still code',
    '~~~~',
    '````md',
    '```',
    '# code',
    '````',
    '# After',
    '- item',
    '  ```',
    '  # in list code',
    '  ```',
    '> ```',
    '> # quoted code',
    '# ends the quote, and its fence',
  );
  assert.deepEqual(headings(doc), [
    [1, 'After', 12, 'after'],
    [1, 'ends the quote, and its fence', 19, 'ends-the-quote-and-its-fence'],
  ]);
  assert.deepEqual(links(doc), []);
  // An unclosed fence runs to the end.
  assert.deepEqual(headings(md('```', '# x')), []);
  // A backtick fence's info string holds no backtick: that is inline code.
  assert.deepEqual(headings(md('``` `x` ```', '# Real')), [[1, 'Real', 2, 'real']]);
});

test('indented code blocks hide links, list continuations do not', () => {
  const doc = md('Text', '', '    [code](a.md)', '', '- item', '', '    [continued](b.md)');
  assert.deepEqual(links(doc), [[7, 'b.md', 'continued', 'inline', false]]);
});

test('HTML comments, raw HTML blocks and front matter are skipped', () => {
  const doc = md(
    '---',
    'title: "# not a heading"',
    '---',
    '<!--',
    '# commented out',
    '[nor](this.md)',
    '-->',
    '<script>',
    '# nope',
    '</script>',
    '# Real <!-- x -->',
  );
  assert.deepEqual(headings(doc), [[1, 'Real', 11, 'real']]);
  assert.deepEqual(links(doc), []);
});

test('heading text: markup removed, as GitHub renders it', () => {
  const t = (h) => headings(h)[0].slice(1, 2)[0];
  assert.equal(t('# **Bold** and _em_ and `code_x` and ~~gone~~'), 'Bold and em and code_x and gone');
  assert.equal(t('# snake_case_name and 2 * 3'), 'snake_case_name and 2 * 3');
  assert.equal(t('# [Link text](x.md) and ![logo](l.png) image'), 'Link text and  image');
  assert.equal(t('# Fish &amp; chips &#169; &unknown;'), 'Fish & chips © &unknown;');
  assert.equal(t('# Escaped \\*stars\\* and \\# hash'), 'Escaped *stars* and # hash');
  assert.equal(t('# <a name="x"></a>With anchor'), 'With anchor');
});

test('anchors: GitHub slugs, numbered repeats, HTML ids', () => {
  const doc = parseMarkdown(
    md('# Intro', '## Intro', '## Intro', '# Intro-1', '## `fs.readFile(path[, options])`', '## Ünïcödé Straße', '## 🚀 Emoji', '<a id="custom"></a>', '<a name="named">x</a>', '<div id="block-id">'),
  );
  assert.deepEqual(
    doc.headings.map((h) => h.anchor),
    ['intro', 'intro-1', 'intro-2', 'intro-1-1', 'fsreadfilepath-options', 'ünïcödé-straße', '-emoji'],
  );
  for (const a of ['custom', 'named', 'block-id', 'intro-2']) assert.ok(doc.anchors.has(a), a);
});

test('inline links: titles, <destinations>, parentheses, escapes, line numbers', () => {
  assert.deepEqual(
    links(
      md(
        'See [one](a.md "Title") and [two](<b c.md>) and [three](x_(y).md).',
        'A [multi',
        'line](m.md) link, [empty]() and [esc](p\\)q.md) and [ent](a&amp;b.md).',
        '[no link] (x.md) and [broken](unclosed.md',
      ),
    ),
    [
      [1, 'a.md', 'one', 'inline', false],
      [1, 'b c.md', 'two', 'inline', false],
      [1, 'x_(y).md', 'three', 'inline', false],
      [2, 'm.md', 'multi line', 'inline', false],
      [3, '', 'empty', 'inline', false],
      [3, 'p)q.md', 'esc', 'inline', false],
      [3, 'a&b.md', 'ent', 'inline', false],
    ],
  );
});

test('reference links: full, collapsed, shortcut; labels fold case; first definition wins', () => {
  const doc = parseMarkdown(
    md(
      '[Full][Guide], [Guide][], [guide], [Missing][nope], [^1], [plain text].',
      '',
      '[guide]: docs/guide.md "The guide"',
      '[GUIDE]: ignored.md',
      '[^1]: a footnote, not a link',
    ),
  );
  assert.deepEqual(
    doc.links.map((l) => [l.target, l.text, l.syntax, l.label]),
    [
      ['docs/guide.md', 'Full', 'reference', 'guide'],
      ['docs/guide.md', 'Guide', 'reference', 'guide'],
      ['docs/guide.md', 'guide', 'reference', 'guide'],
    ],
  );
  assert.deepEqual(doc.undefinedReferences, [{ line: 1, label: 'nope', text: 'Missing' }]);
});

test('images, and the badge pattern of an image inside a link', () => {
  assert.deepEqual(links('[![build](https://ci/badge.svg)](https://ci/job) ![alt *text*](img/a.png)'), [
    [1, 'https://ci/job', 'build', 'inline', false],
    [1, 'https://ci/badge.svg', 'build', 'inline', true],
    [1, 'img/a.png', 'alt text', 'inline', true],
  ]);
});

test('autolinks and bare URLs; trailing punctuation is not part of them', () => {
  assert.deepEqual(
    links('<https://a.example/x> <mailto:m@x.org> <me@example.com> see https://b.example/p?q=1. and (www.c.example/d) or http://e.example/f_(g))'),
    [
      [1, 'https://a.example/x', 'https://a.example/x', 'autolink', false],
      [1, 'mailto:m@x.org', 'mailto:m@x.org', 'autolink', false],
      [1, 'mailto:me@example.com', 'me@example.com', 'autolink', false],
      [1, 'https://b.example/p?q=1', 'https://b.example/p?q=1', 'bare_url', false],
      [1, 'www.c.example/d', 'www.c.example/d', 'bare_url', false],
      [1, 'http://e.example/f_(g)', 'http://e.example/f_(g)', 'bare_url', false],
    ],
  );
  // Not a URL: inside a word, or without a dotted host.
  assert.deepEqual(links('xhttps://a.example and https://localhost'), []);
});

test('code spans hide links, brackets and autolinks', () => {
  assert.deepEqual(links('`[a](b.md)` and ``x ` [c](d.md)`` and `<https://x.example>` but [e](f.md)'), [
    [1, 'f.md', 'e', 'inline', false],
  ]);
});

test('raw HTML: <a href> and <img src> are links, in HTML blocks and inline', () => {
  const doc = md(
    '<p align="center">',
    '  <img src="logo.png" alt="Logo">',
    '  <a href="docs/x.md">docs</a>',
    '</p>',
    '',
    'Inline <a href=\'#intro\'>intro</a> and <img src=i.png>.',
  );
  assert.deepEqual(links(doc), [
    [2, 'logo.png', 'Logo', 'html', true],
    [3, 'docs/x.md', '', 'html', false],
    [6, '#intro', '', 'html', false],
    [6, 'i.png', '', 'html', true],
  ]);
});

test('links in headings, tables, lists and block quotes; CRLF line ends', () => {
  const doc = '# [Head](h.md)\r\n\r\n| a | [t](t.md) |\r\n|---|---|\r\n\r\n- [l](l.md)\r\n> [q](q.md)\r\n';
  assert.deepEqual(
    links(doc).map((l) => [l[0], l[1]]),
    [
      [1, 'h.md'],
      [3, 't.md'],
      [6, 'l.md'],
      [7, 'q.md'],
    ],
  );
  assert.equal(parseMarkdown(doc).lines, 7);
});

test('links: false reads headings and anchors only', () => {
  const doc = parseMarkdown(md('# A [x](y.md)', 'text [z](w.md) <a id="k"></a>'), { links: false });
  assert.deepEqual(doc.links, []);
  assert.deepEqual(doc.headings.map((h) => h.text), ['A x']);
  assert.ok(doc.anchors.has('k'));
});

test('an empty document', () => {
  assert.deepEqual(parseMarkdown(''), { lines: 0, headings: [], links: [], anchors: new Set(), undefinedReferences: [] });
});
