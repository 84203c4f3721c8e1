// What the model reads: an indented outline, and a link report with the
// broken links first. Pure functions of the arguments and the value.

import * as kit from '../../../kit/index.js';

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

function quote(s, max = 80) {
  const t = s.replace(/\s+/g, ' ').trim();
  return JSON.stringify(t.length > max ? `${t.slice(0, max - 1)}…` : t);
}

/** `md_outline`: one heading a line, indented by depth in the tree. */
export function renderOutline(args, value) {
  const head = `${value.path}: ${plural(value.count, 'heading')}, ${plural(value.lines, 'line')}`;
  if (value.count === 0) return [kit.text(`${head}.`)];
  const out = [`${head}`, ''];
  const walk = (nodes, depth) => {
    for (const h of nodes) {
      out.push(`${'  '.repeat(depth)}${'#'.repeat(h.level)} ${h.text || '(empty)'}  (line ${h.line}, #${h.anchor})`);
      walk(h.children, depth + 1);
    }
  };
  walk(value.headings, 0);
  return [kit.text(out.join('\n'))];
}

const REASONS = {
  missing_file: (l) => `no such file: ${l.resolved}`,
  missing_anchor: (l) =>
    `no heading or anchor #${l.target.split('#').slice(1).join('#')}${l.resolved ? ` in ${l.resolved}` : ''}` +
    (l.suggestion ? ` (did you mean ${l.suggestion}?)` : ''),
  missing_line: (l) => `${l.resolved} has no such line`,
  empty_target: () => 'the link has no target',
  outside_workspace: (l) => `${l.resolved} is outside the directories this tool may read`,
  unreadable: (l) => `${l.resolved} could not be read`,
  anchor_not_checked: () => 'the file exists; its anchor was not checked (not a Markdown file)',
};

function linkLine(l) {
  const what = l.image ? 'image' : 'link';
  const text = l.text ? ` ${quote(l.text)}` : '';
  let line = `  line ${l.line}: ${l.target || '(empty)'}  (${what}${text})`;
  if (l.status === 'broken' || (l.status === 'unchecked' && l.reason !== 'external')) {
    line += ` — ${(REASONS[l.reason] ?? (() => l.reason))(l)}`;
  }
  return line;
}

/** `md_links`: counts, then broken links, then the links by kind. */
export function renderLinks(args, value) {
  const c = value.counts;
  let head = `${value.path}: ${plural(c.total, 'link')} (${c.relative} relative, ${plural(c.anchor, 'anchor')}, ${c.external} external; ${plural(c.images, 'image')})`;
  if (value.checked) head += `; checked: ${c.broken} broken`;
  const sections = [head];
  const links = value.links;
  const broken = links.filter((l) => l.status === 'broken');
  if (broken.length) {
    sections.push([`Broken (${broken.length}):`, ...broken.map(linkLine)].join('\n'));
  }
  const groups = [
    ['relative', 'Relative'],
    ['anchor', 'Anchors'],
    ['external', 'External (not fetched)'],
  ];
  for (const [kind, title] of groups) {
    const list = links.filter((l) => l.kind === kind && l.status !== 'broken');
    if (list.length) sections.push([`${title} (${list.length}):`, ...list.map(linkLine)].join('\n'));
  }
  const undef = value.undefined_references;
  if (undef.length) {
    sections.push(
      [
        `Undefined references (${undef.length}):`,
        ...undef.map((u) => `  line ${u.line}: [${u.text}][${u.label}] — no definition [${u.label}]: ...`),
      ].join('\n'),
    );
  }
  if (!value.checked && c.relative + c.anchor > 0) {
    sections.push('(call again with "check": true to check relative links and anchors)');
  }
  return [kit.text(sections.join('\n\n'))];
}
