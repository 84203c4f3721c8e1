"""What the tools compute from a :class:`~table_tool.loader.Table`: its
schema, column statistics, and the rows meeting a set of conditions.

Each function returns the tool's canonical value (plain JSON data); the
tools in :mod:`table_tool.tools` add the arguments' echo and declare the
schemas.

Speed matters more than usual here: inside a component, CPython runs as
WebAssembly under a fuel budget, so every Python-level step per cell counts.
Rows are therefore taken by chunks and transposed into columns (``zip`` runs
in C), and per-cell work is pushed into C where it can be: ``Counter`` over
a column, ``map`` of a built-in, one regex over a numeric column
(:func:`~table_tool.cells.all_of_kind`), and caches keyed by cell text for
the rest.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from dataclasses import dataclass
from itertools import compress
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import toolhost_kit as kit

from . import cells
from .loader import Table

#: How many example values ``table_schema`` gives per column.
EXAMPLES = 3
#: Rows per chunk.
CHUNK = 2048
#: Most entries of a per-column cache of cell texts.
_CACHE_LIMIT = 50_000


@dataclass(frozen=True)
class Condition:
    """One filter condition: ``column op value``."""

    column: str
    op: str
    value: Any


def chunks(table: Table) -> Iterator[Tuple[int, List[Sequence[Any]]]]:
    """The table's rows by chunks: the row count and one sequence of cells
    per column."""
    return table.column_chunks(CHUNK)


# ── profile: one pass for types ──────────────────────────────────────────


class _TextColumn:
    """Type, empty cells and examples of a CSV column."""

    def __init__(self) -> None:
        self.kinds: set = set()
        self.empty = 0
        self.examples: List[str] = []
        self._cache: Dict[str, str] = {}

    def add(self, texts: Sequence[str]) -> None:
        if len(self.examples) == EXAMPLES:
            if cells.column_type(self.kinds, textual=True) == cells.STRING:
                # Text whatever comes: only empty cells still count.
                self.empty += texts.count("") + sum(map(str.isspace, texts))
                return
            if self.kinds and self.kinds <= {cells.INTEGER, cells.NUMBER}:
                kind = cells.NUMBER if cells.NUMBER in self.kinds else cells.INTEGER
                if cells.all_of_kind(texts, kind):
                    return  # all numbers of the kind already seen, none empty
        for text, n in Counter(texts).items():  # first-seen order
            kind = self._cache.get(text)
            if kind is None:
                kind = cells.text_kind(text)
                if len(self._cache) < _CACHE_LIMIT:
                    self._cache[text] = kind
            if kind == cells.EMPTY:
                self.empty += n
                continue
            self.kinds.add(kind)
            if len(self.examples) < EXAMPLES and text not in self.examples:
                self.examples.append(text)


class _ValueColumn:
    """Type, empty cells and examples of a JSON column."""

    def __init__(self) -> None:
        self.kinds: set = set()
        self.empty = 0
        self.examples: List[Any] = []
        self._seen: set = set()

    def add(self, values: Sequence[Any]) -> None:
        for value_type, n in Counter(map(type, values)).items():  # counted in C
            kind = cells.KIND_OF_TYPE[value_type]
            if kind == cells.EMPTY:
                self.empty += n
            else:
                self.kinds.add(kind)
        if len(self.examples) < EXAMPLES:
            for value in values:
                if value is None:
                    continue
                key = (cells.value_kind(value), cells.as_text(value))
                if key not in self._seen:
                    self._seen.add(key)
                    self.examples.append(value)
                    if len(self.examples) == EXAMPLES:
                        break


class Profile:
    """One pass over a table: the row count and, per column, the type, the
    count of empty cells and the first few distinct values."""

    def __init__(self, table: Table) -> None:
        make = _TextColumn if table.textual else _ValueColumn
        columns = [make() for _ in table.columns]
        rows = 0
        for n, cols in chunks(table):
            rows += n
            for column, values in zip(columns, cols):
                column.add(values)
        self.table = table
        self.rows = rows
        self.types = [cells.column_type(c.kinds, textual=table.textual) for c in columns]
        self.empty = [c.empty for c in columns]
        self._examples = [c.examples for c in columns]

    def converter(self, index: int) -> Callable[[Any], Any]:
        """A function from a cell of column ``index`` to its value."""
        if not self.table.textual:
            return _identity
        col_type = self.types[index]
        return lambda text: cells.convert_text(text, col_type)

    def examples(self, index: int) -> List[Any]:
        """Up to :data:`EXAMPLES` distinct values of column ``index``, in
        the order they first appear."""
        out, seen = [], set()
        for value in map(self.converter(index), self._examples[index]):
            key = (cells.value_kind(value), cells.as_text(value))
            if key not in seen:  # "TRUE" and "true" are one value
                seen.add(key)
                out.append(value)
        return out

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
    numeric = {i for i in selected if p.types[i] in cells.NUMERIC_TYPES}
    numbers: Dict[int, List[Any]] = {i: [] for i in numeric}
    # CSV: counted by text (in C), turned into values at the end.
    texts: Dict[int, Counter] = {i: Counter() for i in selected if i not in numeric}
    # JSON: counted by kind and text, so that 1, true and "1" of a mixed
    # column stay apart and arrays and objects count too: key -> [value, n].
    tallies: Dict[int, Dict[Tuple[str, str], List[Any]]] = {i: {} for i in texts}
    for _, cols in chunks(table):
        for i in selected:
            values = cols[i]
            if i in numeric:
                numbers[i].extend(_numbers(values, p.types[i], table.textual))
            elif table.textual:
                texts[i].update(values)
            else:
                _tally(tallies[i], values)
    out = []
    for i in selected:
        col: Dict[str, Any] = {
            "name": table.columns[i],
            "type": p.types[i],
            "count": p.rows - p.empty[i],
            "empty": p.empty[i],
        }
        if i in numeric:
            col["distinct"] = len(set(numbers[i]))
            col.update(_numeric_stats(numbers[i]))
        else:
            counts = _text_counts(texts[i], p.converter(i)) if table.textual else list(tallies[i].values())
            col["distinct"] = len(counts)
            col["top"] = [{"value": v, "count": n} for v, n in _most_common(counts, top)]
        out.append(col)
    return {"rows": p.rows, "columns": out}


def _numbers(values: Sequence[Any], col_type: str, textual: bool) -> Iterator[Any]:
    """The non-empty values of a numeric column, as numbers."""
    if not textual:
        return (v for v in values if v is not None)
    convert = int if col_type == cells.INTEGER else float
    return map(convert, filter(None, map(str.strip, values)))


def _tally(tally: Dict[Tuple[str, str], List[Any]], values: Sequence[Any]) -> None:
    """Adds JSON values to ``tally``: (kind, text) -> [value, count]."""
    try:
        # Counted in C, keyed by type too (1, 1.0 and true are equal keys).
        counted: Any = Counter(zip(map(type, values), values)).items()
    except TypeError:  # arrays or objects: not hashable
        counted = (((type(v), v), 1) for v in values)
    for (_, value), n in counted:
        if value is None:
            continue
        key = (cells.value_kind(value), cells.as_text(value))
        entry = tally.get(key)
        if entry is None:
            tally[key] = [value, n]
        else:
            entry[1] += n


def _text_counts(counter: Counter, convert: Callable[[str], Any]) -> List[List[Any]]:
    """CSV texts and their counts as [value, count] pairs, in first-seen
    order: empty cells left out, texts of the same value (``TRUE`` and
    ``true``) merged."""
    blank = [t for t in filter(str.isspace, counter)]
    blank.append("")
    for text in blank:
        counter.pop(text, None)
    probe = next(iter(counter), None)
    if probe is not None and isinstance(convert(probe), str):
        return [list(item) for item in counter.items()]  # text columns: as they are
    merged: Dict[Tuple[str, str], List[Any]] = {}
    for text, n in counter.items():
        value = convert(text)
        key = (cells.value_kind(value), cells.as_text(value))
        if key in merged:
            merged[key][1] += n
        else:
            merged[key] = [value, n]
    return list(merged.values())


def _most_common(counts: Sequence[Sequence[Any]], top: int) -> List[Sequence[Any]]:
    """The ``top`` most frequent [value, count] pairs, ties in first-seen
    order (the sort is stable, reversed too, and runs in C)."""
    return sorted(counts, key=operator.itemgetter(1), reverse=True)[:top]


def _numeric_stats(values: List[Any]) -> Dict[str, Any]:
    """min, max, sum, mean, median and the sample standard deviation (``None``
    below two values, or where a float overflows)."""
    n = len(values)
    if n == 0:
        return {"min": None, "max": None, "sum": None, "mean": None, "median": None, "stddev": None}
    values.sort()
    total = sum(values) if all(type(v) is int for v in values) else math.fsum(values)
    mean = math.fsum(values) / n
    mid = n // 2
    median = values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2
    stddev = None
    if n >= 2:
        stddev = math.sqrt(math.fsum([(v - mean) ** 2 for v in values]) / (n - 1))
    return {
        "min": _finite(values[0]),
        "max": _finite(values[-1]),
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
    tests = [(p.index(c.column), _predicate(p, p.index(c.column), c)) for c in where]
    converters = [p.converter(i) for i in selected]
    names = [table.columns[i] for i in selected]
    rows: List[Dict[str, Any]] = []
    matched = 0
    for n, cols in chunks(table):
        if tests:
            masks = [map(test, cols[i]) for i, test in tests]
            hits = list(compress(range(n), map(all, zip(*masks))))
        else:
            hits = range(n)
        # The page is rows offset+1 .. offset+limit of the matches.
        start = max(0, offset - matched)
        stop = max(0, offset + limit - matched)
        for r in hits[start:stop]:
            rows.append({name: conv(cols[i][r]) for name, conv, i in zip(names, converters, selected)})
        matched += len(hits)
    return {
        "columns": names,
        "rows": rows,
        "total_rows": p.rows,
        "matched": matched,
        "offset": offset,
        "truncated": matched > offset + len(rows),
    }


_ORDER = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def _predicate(p: Profile, index: int, cond: Condition) -> Callable[[Any], bool]:
    """A test of one cell of column ``index`` for ``cond``: the meaning of
    :func:`table_tool.cells.matches`, made fast for CSV columns."""
    _check_condition(p, index, cond)
    op, value = cond.op, cond.value
    col_type = p.types[index]
    textual = p.table.textual
    if col_type in cells.NUMERIC_TYPES and op in _ORDER and value is not None:
        number = cells.as_number(value)
        if number is not None:
            # A number against a numeric column: compare in place.
            compare = _ORDER[op]
            if_empty = op == "ne"
            if not textual:
                return lambda cell: if_empty if cell is None else compare(cell, number)
            convert = int if col_type == cells.INTEGER else float

            def numeric(text: str) -> bool:
                s = text.strip()
                return compare(convert(s), number) if s else if_empty

            return numeric
    convert = p.converter(index)
    cache: Dict[Any, bool] = {}

    def cached(cell: Any) -> bool:
        # Keyed by type too: 1, 1.0 and true are equal keys in Python.
        try:
            key = (type(cell), cell)
            hit = cache.get(key)
        except TypeError:  # a JSON array or object
            return cells.matches(cell, op, value)
        if hit is None:
            hit = cells.matches(convert(cell), op, value)
            if len(cache) < _CACHE_LIMIT:
                cache[key] = hit
        return hit

    return cached


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
    if ordering and col_type in cells.NUMERIC_TYPES and cells.as_number(cond.value) is None:
        raise kit.ToolError.invalid_arguments(
            f"column {cond.column!r} holds numbers ({col_type}); compare it with a number, "
            f"not {cells.as_text(cond.value)!r}"
        )
