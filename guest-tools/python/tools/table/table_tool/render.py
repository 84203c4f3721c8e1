"""What the model reads: each tool's value as a short heading and a
Markdown table.

Renderers are pure functions of the arguments and the value (the host runs
them in a fresh instance). Cells are shortened to :data:`MAX_CELL` characters
and made safe for a Markdown table; the value keeps everything.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

import toolhost_kit as kit

from . import cells

#: Longest cell shown, in characters.
MAX_CELL = 60
#: Longest cell listing several values (examples, most frequent values).
_LIST_CELL = 400


def render_schema(args: Dict[str, Any], value: Dict[str, Any]) -> List[kit.Content]:
    columns = value["columns"]
    head = (
        f"{value['path']} ({value['format'].upper()}): {_count(value['rows'], 'row')}, "
        f"{_count(len(columns), 'column')}"
    )
    if not columns:
        return [kit.Text(head)]
    table = markdown_table(
        ["column", "type", "empty", "examples"],
        [
            [c["name"], c["type"], c["empty"], ", ".join(_short(e, 20) for e in c["examples"])]
            for c in columns
        ],
        max_width=_LIST_CELL,
    )
    return [kit.Text(f"{head}\n\n{table}")]


def render_stats(args: Dict[str, Any], value: Dict[str, Any]) -> List[kit.Content]:
    columns = value["columns"]
    head = f"{value['path']} ({value['format'].upper()}): {_count(value['rows'], 'row')}"
    parts = [head]
    numeric = [c for c in columns if "mean" in c]
    other = [c for c in columns if "top" in c]
    if numeric:
        parts.append(
            markdown_table(
                ["column", "type", "count", "empty", "distinct", "min", "max", "mean", "median", "stddev"],
                [
                    [c["name"], c["type"], c["count"], c["empty"], c["distinct"]]
                    + [_number(c[k]) for k in ("min", "max", "mean", "median", "stddev")]
                    for c in numeric
                ],
            )
        )
    if other:
        parts.append(
            markdown_table(
                ["column", "type", "count", "empty", "distinct", "most frequent"],
                [
                    [
                        c["name"],
                        c["type"],
                        c["count"],
                        c["empty"],
                        c["distinct"],
                        ", ".join(f"{_short(t['value'], 24)} ({t['count']})" for t in c["top"]),
                    ]
                    for c in other
                ],
                max_width=_LIST_CELL,
            )
        )
    return [kit.Text("\n\n".join(parts))]


def render_filter(args: Dict[str, Any], value: Dict[str, Any]) -> List[kit.Content]:
    rows = value["rows"]
    where = args.get("where") or []
    conditions = " and ".join(
        f"{w.get('column')} {w.get('op')} {_literal(w.get('value'))}" for w in where
    )
    matched, total, offset = value["matched"], value["total_rows"], value["offset"]
    if conditions:
        head = f"{value['path']}: {matched} of {_count(total, 'row')} match {conditions}"
    else:
        head = f"{value['path']}: {_count(total, 'row')}"
    if len(rows) == 1:
        head += f"; row {offset + 1}:"
    elif rows:
        head += f"; rows {offset + 1}–{offset + len(rows)}:"
    elif matched:
        head += f"; none past offset {offset}."
    parts = [head]
    if rows:
        names = value["columns"]
        parts.append(markdown_table(names, [[r.get(n) for n in names] for r in rows]))
    if value["truncated"]:
        left = matched - offset - len(rows)
        more = "matching rows" if conditions else "rows"
        parts.append(f"{left} more {more}: call again with offset={offset + len(rows)}.")
    return [kit.Text("\n\n".join(parts))]


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int = MAX_CELL
) -> str:
    """A Markdown (GitHub) table of values: each cell is :func:`_short`
    (at most ``max_width`` characters) with its pipes escaped."""

    def cell(value: Any) -> str:
        return _short(value, max_width).replace("|", "\\|")

    lines = [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
    ]
    lines.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)
    return "\n".join(lines)


def _short(value: Any, width: int) -> str:
    """A value as one line of at most ``width`` characters: empty for null,
    numbers shortened, runs of blanks and newlines as one space."""
    if value is None:
        return ""
    text = _number(value) if cells.is_number(value) else cells.as_text(value)
    text = " ".join(text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _number(x: Any) -> str:
    """A number for people: integers as they are, other numbers with at
    most four decimals (three significant digits below 0.001)."""
    if x is None:
        return ""
    if isinstance(x, int):
        return str(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 1e-3:
        return f"{x:.4f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"


def _literal(value: Any) -> str:
    """A condition's value as JSON: ``"Paris"``, ``3``, ``true``, ``null``."""
    return json.dumps(value, ensure_ascii=False)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
