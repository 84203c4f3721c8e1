"""What the tools compute from a :class:`~table_tool.loader.Table`: its
schema, column statistics, and the rows meeting a set of conditions.

Each function returns the tool's canonical value (plain JSON data); the
tools in :mod:`table_tool.tools` add the arguments' echo and declare the
schemas.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import toolhost_kit as kit

from . import cells
from .loader import Table

#: How many example values ``table_schema`` gives per column.
EXAMPLES = 3


@dataclass(frozen=True)
class Condition:
    """One filter condition: ``column op value``."""

    column: str
    op: str
    value: Any


class Profile:
    """One pass over a table: the row count and, per column, the type, the
    count of empty cells and the first few distinct values."""

    def __init__(self, table: Table) -> None:
        width = len(table.columns)
        kinds: List[set] = [set() for _ in range(width)]
        empty = [0] * width
        firsts: List[List[Any]] = [[] for _ in range(width)]
        kind_of = cells.text_kind if table.textual else cells.value_kind
        rows = 0
        for row in table.rows():
            rows += 1
            for i, cell in enumerate(row):
                kind = kind_of(cell)
                if kind == cells.EMPTY:
                    empty[i] += 1
                    continue
                kinds[i].add(kind)
                if len(firsts[i]) < EXAMPLES and cell not in firsts[i]:
                    firsts[i].append(cell)
        self.table = table
        self.rows = rows
        self.types = [cells.column_type(k, textual=table.textual) for k in kinds]
        self.empty = empty
        self._firsts = firsts

    def converter(self, index: int):
        """A function from a cell of column ``index`` to its value."""
        if not self.table.textual:
            return _identity
        col_type = self.types[index]
        return lambda text: cells.convert_text(text, col_type)

    def examples(self, index: int) -> List[Any]:
        convert = self.converter(index)
        return [convert(c) for c in self._firsts[index]]

    def index(self, column: str) -> int:
        """The position of ``column``; ``unknown_column`` when there is none."""
        try:
            return self.table.columns.index(column)
        except ValueError:
            raise unknown_column(self.table, column) from None


def _identity(value: Any) -> Any:
    return value


def unknown_column(table: Table, column: str) -> kit.ToolError:
    shown = table.columns[:50]
    more = f" (and {len(table.columns) - 50} more)" if len(table.columns) > 50 else ""
    return kit.ToolError(
        "unknown_column",
        f"{table.path} has no column {column!r}; its columns are: {', '.join(shown)}{more}",
        {"column": column, "columns": table.columns},
    )


def select(profile: Profile, columns: Optional[Sequence[str]]) -> List[int]:
    """The indexes of ``columns`` (all when ``None``), in the order given,
    without repeats."""
    if columns is None:
        return list(range(len(profile.table.columns)))
    seen: Dict[int, None] = {}
    for name in columns:
        seen.setdefault(profile.index(name), None)
    return list(seen)


# ── table_schema ─────────────────────────────────────────────────────────


def schema(table: Table) -> Dict[str, Any]:
    p = Profile(table)
    return {
        "rows": p.rows,
        "columns": [
            {
                "name": name,
                "type": p.types[i],
                "empty": p.empty[i],
                "examples": p.examples(i),
            }
            for i, name in enumerate(table.columns)
        ],
    }


# ── table_stats ──────────────────────────────────────────────────────────


def stats(table: Table, columns: Optional[Sequence[str]], top: int) -> Dict[str, Any]:
    p = Profile(table)
    selected = select(p, columns)
    converters = [p.converter(i) for i in selected]
    numeric = [p.types[i] in cells.NUMERIC_TYPES for i in selected]
    numbers: List[List[Any]] = [[] for _ in selected]
    counters: List[Counter] = [Counter() for _ in selected]
    originals: List[Dict[Tuple[str, str], Any]] = [{} for _ in selected]
    for row in table.rows():
        for j, i in enumerate(selected):
            value = converters[j](row[i])
            if value is None:
                continue
            if numeric[j]:
                numbers[j].append(value)
            else:
                # Keyed by kind and text, so that 1, 1.0, true and "1" of a
                # mixed JSON column stay apart.
                key = (cells.value_kind(value), cells.as_text(value))
                counters[j][key] += 1
                originals[j].setdefault(key, value)
    out = []
    for j, i in enumerate(selected):
        col: Dict[str, Any] = {
            "name": table.columns[i],
            "type": p.types[i],
            "count": p.rows - p.empty[i],
            "empty": p.empty[i],
        }
        if numeric[j]:
            col["distinct"] = len(set(numbers[j]))
            col.update(_numeric_stats(numbers[j]))
        else:
            col["distinct"] = len(counters[j])
            col["top"] = [
                {"value": originals[j][key], "count": n} for key, n in counters[j].most_common(top)
            ]
        out.append(col)
    return {"rows": p.rows, "columns": out}


def _numeric_stats(values: List[Any]) -> Dict[str, Any]:
    """min, max, sum, mean, median and the sample standard deviation (``None``
    below two values, or where a float overflows)."""
    n = len(values)
    if n == 0:
        return {"min": None, "max": None, "sum": None, "mean": None, "median": None, "stddev": None}
    ordered = sorted(values)
    total = sum(ordered) if all(isinstance(v, int) for v in ordered) else math.fsum(ordered)
    mean = math.fsum(ordered) / n
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    stddev = None
    if n >= 2:
        stddev = math.sqrt(math.fsum((v - mean) ** 2 for v in ordered) / (n - 1))
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "sum": _finite(total),
        "mean": _finite(mean),
        "median": _finite(median),
        "stddev": _finite(stddev),
    }


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


# ── table_filter ─────────────────────────────────────────────────────────


def filter_rows(
    table: Table,
    where: Sequence[Condition],
    columns: Optional[Sequence[str]],
    offset: int,
    limit: int,
) -> Dict[str, Any]:
    p = Profile(table)
    selected = select(p, columns)
    tests = []
    for cond in where:
        i = p.index(cond.column)
        _check_condition(p, i, cond)
        tests.append((i, p.converter(i), cond.op, cond.value))
    converters = {i: p.converter(i) for i in selected}
    names = [table.columns[i] for i in selected]
    rows = []
    matched = 0
    for row in table.rows():
        if all(cells.matches(convert(row[i]), op, value) for i, convert, op, value in tests):
            matched += 1
            if offset < matched <= offset + limit:
                rows.append({name: converters[i](row[i]) for name, i in zip(names, selected)})
    return {
        "columns": names,
        "rows": rows,
        "total_rows": p.rows,
        "matched": matched,
        "offset": offset,
        "truncated": matched > offset + len(rows),
    }


def _check_condition(p: Profile, index: int, cond: Condition) -> None:
    """Refuses conditions that can never make sense, with a message that
    says what would."""
    if cond.op not in cells.OPERATORS:
        raise kit.ToolError.invalid_arguments(
            f"unknown operator {cond.op!r}; use one of {', '.join(cells.OPERATORS)}"
        )
    if cond.value is None and cond.op not in ("eq", "ne"):
        raise kit.ToolError.invalid_arguments(
            f"{cond.column} {cond.op} null: null (an empty cell) only works with eq and ne"
        )
    col_type = p.types[index]
    ordering = cond.op in ("lt", "le", "gt", "ge")
    if ordering and col_type in cells.NUMERIC_TYPES and cells.compare(0, cond.value) is None:
        raise kit.ToolError.invalid_arguments(
            f"column {cond.column!r} holds numbers ({col_type}); compare it with a number, "
            f"not {cells.as_text(cond.value)!r}"
        )
