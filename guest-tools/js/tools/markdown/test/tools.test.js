import assert from 'node:assert/strict';
import { test } from 'node:test';

import { call, checkSchemas, textOf, workspace } from '../../../kit/testing.js';
import { MAX_FILE_BYTES } from '../src/links.js';
import { MD_LINKS, MD_OUTLINE, TOOLSET } from '../src/tools.js';

const README = [
  '# Project',
  '',
  'See the [guide](docs/guide.md), its [setup](docs/guide.md#setup),',
  'a [typo](docs/guide.md#instal), a [missing file](docs/nope.md), [code](src/main.rs#L2),',
  '[past the end](src/main.rs#L99), [the docs](docs/), [outside](../../etc/passwd),',
  '[root](/docs/guide.md?plain=1#usage), [encoded](docs/My%20File.md), [empty]().',
  '',
  '## Usage',
  '',
  '[Up](#project), [down](#usage), [nowhere](#usgae), [case](#Usage), [site](https://example.com/x).',
  '![logo](img/logo.png) and ![gone](img/gone.png)',
  '',
  '### Details',
  '',
  '[undefined][ref]',
  '',
  '# Appendix',
].join('\n');

const FILES = {
  'README.md': README,
  'docs/guide.md': '# Guide\n\n## Setup\n\n## Install\n\n## Usage\n',
  'docs/My File.md': 'x\n',
  'src/main.rs': 'fn main() {\n}\n',
  'img/logo.png': 'png',
};

test('schemas are valid draft 2020-12, and the declarations are right', () => {
  for (const tool of TOOLSET.tools) {
    checkSchemas(tool);
    assert.deepEqual(tool.annotations, { readOnly: true, destructive: false, idempotent: true, openWorld: false });
    assert.deepEqual(tool.paths, [{ pointer: '/path', access: 'read' }]);
  }
  assert.deepEqual(TOOLSET.tools.map((t) => t.name), ['md_outline', 'md_links']);
});

test('md_outline: the heading tree', (t) => {
  workspace(t, FILES);
  const { value, content } = call(TOOLSET, 'md_outline', { path: 'README.md' });
  assert.equal(value.path, 'README.md');
  assert.equal(value.lines, 17);
  assert.equal(value.count, 4);
  assert.deepEqual(
    value.headings.map((h) => [h.level, h.text, h.line, h.anchor, h.children.length]),
    [
      [1, 'Project', 1, 'project', 1],
      [1, 'Appendix', 17, 'appendix', 0],
    ],
  );
  const usage = value.headings[0].children[0];
  assert.deepEqual([usage.text, usage.children[0].text, usage.children[0].level], ['Usage', 'Details', 3]);
  assert.equal(
    textOf(content),
    [
      'README.md: 4 headings, 17 lines',
      '',
      '# Project  (line 1, #project)',
      '  ## Usage  (line 8, #usage)',
      '    ### Details  (line 13, #details)',
      '# Appendix  (line 17, #appendix)',
    ].join('\n'),
  );
});

test('md_outline: max_level, an empty outline, a relative path from a subdirectory', (t) => {
  workspace(t, FILES);
  const { value } = call(TOOLSET, 'md_outline', { path: 'README.md', max_level: 1 });
  assert.equal(value.count, 2);
  assert.deepEqual(value.headings[0].children, []);
  const empty = call(TOOLSET, 'md_outline', { path: './docs/My File.md' });
  assert.equal(textOf(empty.content), './docs/My File.md: 0 headings, 1 line.');
  assert.throws(() => call(TOOLSET, 'md_outline', { path: 'README.md', max_level: 7 }), (e) => e.code === 'invalid_arguments');
});

test('md_links without check: every link, classified', (t) => {
  workspace(t, FILES);
  const { value, content } = call(TOOLSET, 'md_links', { path: 'README.md' });
  assert.equal(value.checked, false);
  assert.deepEqual(value.counts, { total: 18, relative: 13, anchor: 4, external: 1, images: 2 });
  assert.ok(value.links.every((l) => l.status === undefined));
  assert.deepEqual(value.links[0], { line: 3, kind: 'relative', syntax: 'inline', image: false, text: 'guide', target: 'docs/guide.md' });
  assert.deepEqual(value.undefined_references, [{ line: 15, label: 'ref', text: 'undefined' }]);
  const text = textOf(content);
  assert.match(text, /^README\.md: 18 links \(13 relative, 4 anchors, 1 external; 2 images\)/);
  assert.match(text, /call again with "check": true/);
});

test('md_links with check: what is broken, and why', (t) => {
  workspace(t, FILES);
  const { value, content } = call(TOOLSET, 'md_links', { path: 'README.md', check: true });
  const status = Object.fromEntries(value.links.map((l) => [l.text || l.target, [l.status, l.reason, l.resolved, l.suggestion]]));
  assert.deepEqual(status, {
    guide: ['ok', undefined, '/workspace/docs/guide.md', undefined],
    setup: ['ok', undefined, '/workspace/docs/guide.md', undefined],
    typo: ['broken', 'missing_anchor', '/workspace/docs/guide.md', '#install'],
    'missing file': ['broken', 'missing_file', '/workspace/docs/nope.md', undefined],
    code: ['ok', undefined, '/workspace/src/main.rs', undefined],
    'past the end': ['broken', 'missing_line', '/workspace/src/main.rs', undefined],
    'the docs': ['ok', undefined, '/workspace/docs', undefined],
    outside: ['unchecked', 'outside_workspace', '/etc/passwd', undefined],
    root: ['ok', undefined, '/workspace/docs/guide.md', undefined],
    encoded: ['ok', undefined, '/workspace/docs/My File.md', undefined],
    empty: ['broken', 'empty_target', undefined, undefined],
    Up: ['ok', undefined, undefined, undefined],
    down: ['ok', undefined, undefined, undefined],
    nowhere: ['broken', 'missing_anchor', undefined, '#usage'],
    case: ['ok', undefined, undefined, undefined],
    site: ['unchecked', 'external', undefined, undefined],
    logo: ['ok', undefined, '/workspace/img/logo.png', undefined],
    gone: ['broken', 'missing_file', '/workspace/img/gone.png', undefined],
  });
  assert.equal(value.counts.broken, 6);
  const text = textOf(content);
  const [head, broken] = text.split('\n\n');
  assert.equal(head, 'README.md: 18 links (13 relative, 4 anchors, 1 external; 2 images); checked: 6 broken');
  assert.equal(
    broken,
    [
      'Broken (6):',
      '  line 4: docs/guide.md#instal  (link "typo") — no heading or anchor #instal in /workspace/docs/guide.md (did you mean #install?)',
      '  line 4: docs/nope.md  (link "missing file") — no such file: /workspace/docs/nope.md',
      '  line 5: src/main.rs#L99  (link "past the end") — /workspace/src/main.rs has no such line',
      '  line 6: (empty)  (link "empty") — the link has no target',
      '  line 10: #usgae  (link "nowhere") — no heading or anchor #usgae (did you mean #usage?)',
      '  line 11: img/gone.png  (image "gone") — no such file: /workspace/img/gone.png',
    ].join('\n'),
  );
  assert.match(text, /External \(not fetched\) \(1\):\n {2}line 10: https:\/\/example\.com\/x {2}\(link "site"\)$/m);
  assert.match(text, /Undefined references \(1\):\n {2}line 15: \[undefined\]\[ref\]/);
});

test('links are resolved from the document\'s directory', (t) => {
  workspace(t, { 'docs/a.md': '[b](b.md#two) [up](../top.md) [self](#one)\n\n# One', 'docs/b.md': '## Two', 'top.md': '' });
  const { value } = call(TOOLSET, 'md_links', { path: 'docs/a.md', check: true });
  assert.deepEqual(
    value.links.map((l) => [l.target, l.status, l.resolved]),
    [
      ['b.md#two', 'ok', '/workspace/docs/b.md'],
      ['../top.md', 'ok', '/workspace/top.md'],
      ['#one', 'ok', undefined],
    ],
  );
});

test('failures: not_found, is_directory, not_granted, file_too_large, invalid arguments', (t) => {
  workspace(t, { 'docs/x.md': '' });
  const code = (args, name = 'md_links') => {
    try {
      call(TOOLSET, name, args);
    } catch (err) {
      return [err.code, err.message];
    }
    return undefined;
  };
  assert.deepEqual(code({ path: 'missing.md' }), ['not_found', 'missing.md does not exist']);
  assert.deepEqual(code({ path: 'docs' }, 'md_outline'), ['is_directory', 'docs is a directory, not a file']);
  assert.equal(code({ path: '/etc/passwd' })[0], 'not_granted');
  assert.equal(code({ path: '' })[0], 'invalid_arguments');
  assert.equal(code({ path: 'docs/x.md', check: 'yes' })[0], 'invalid_arguments');
  assert.equal(code({ path: 'docs/x.md', bogus: 1 })[0], 'invalid_arguments');
});

test('a document past the limit is file_too_large', (t) => {
  workspace(t, { 'big.md': 'x'.repeat(MAX_FILE_BYTES + 1), 'max.md': 'x'.repeat(MAX_FILE_BYTES) });
  assert.throws(() => MD_OUTLINE.execute({ path: 'big.md' }), (e) => e.code === 'file_too_large');
  assert.throws(() => MD_LINKS.execute({ path: 'big.md' }), (e) => e.code === 'file_too_large');
  assert.equal(MD_OUTLINE.execute({ path: 'max.md' }).lines, 1);
});

test('a linked document that cannot be read leaves its anchors unchecked', (t) => {
  workspace(t, { 'a.md': '[x](b.md#y) [z](bin.md#k) [d](dir/#k)', 'b.md': 'x\u0000', 'bin.md': 'ok', 'dir/f': '' });
  const { value } = call(TOOLSET, 'md_links', { path: 'a.md', check: true });
  assert.deepEqual(
    value.links.map((l) => [l.status, l.reason]),
    [
      ['unchecked', 'unreadable'],
      ['broken', 'missing_anchor'],
      ['unchecked', 'anchor_not_checked'],
    ],
  );
});
