"""Reading a table file: CSV, TSV, a JSON array of objects, or JSON Lines.

The format comes from the extension (``.csv``, ``.tsv``/``.tab``, ``.json``,
``.jsonl``/``.ndjson``) unless the caller names it. CSV is read with the
``csv`` module: the first row is the header, the delimiter (comma,
semicolon, tab or pipe) is the one the header line uses most, blank lines are
skipped, short rows are padded with empty cells and empty trailing fields
beyond the header are dropped. JSON columns are the keys of
all objects, in the order they first appear.
"""

from __future__ import annotations

import csv
import io
import json
import math
import operator
import os
from itertools import islice
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import toolhost_kit as kit

FORMATS = ("csv", "tsv", "json", "jsonl")

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}

#: Files larger than this are refused (``file_too_large``): the whole file
#: is held in memory, and the component's memory is bounded by its policy.
MAX_FILE_BYTES = 16 * 1024 * 1024

_DELIMITERS = (",", ";", "\t", "|")


class Table:
    """A table read from a file, read again on every pass.

    :meth:`column_chunks` gives the data rows by chunks, transposed: one
    sequence of cells per column. CSV and TSV cells are text (``""`` where a
    row is short), JSON cells are values (``None`` for a missing key). CSV
    text is parsed again on each pass instead of being held as rows: a row
    of Python strings takes several times the memory of its text.
    """

    def __init__(
        self,
        path: str,
        fmt: str,
        columns: List[str],
        *,
        text: str = "",
        delimiter: str = ",",
        records: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        self.path = path
        self.format = fmt
        self.columns = columns
        self._text = text
        self._delimiter = delimiter
        self._records = records or []

    @property
    def textual(self) -> bool:
        """Whether cells are text (CSV, TSV) rather than JSON values."""
        return self.format in ("csv", "tsv")

    def column_chunks(self, size: int = 2048) -> Iterator[Tuple[int, List[Sequence[Any]]]]:
        """The data rows by chunks of up to ``size``: the number of rows and
        one sequence of cells per column. The work per row happens in C
        (``islice``, ``zip``, ``map``), which matters inside a component."""
        if self.textual:
            return self._csv_chunks(size)
        return self._json_chunks(size)

    def rows(self) -> Iterator[List[Any]]:
        """The data rows one by one, each a list of cells."""
        for n, columns in self.column_chunks():
            if columns:
                yield from map(list, zip(*columns))
            else:
                yield from ([] for _ in range(n))

    def _json_chunks(self, size: int) -> Iterator[Tuple[int, List[Sequence[Any]]]]:
        getters = [operator.methodcaller("get", c) for c in self.columns]
        for start in range(0, len(self._records), size):
            records = self._records[start : start + size]
            yield len(records), [list(map(get, records)) for get in getters]

    def _csv_chunks(self, size: int) -> Iterator[Tuple[int, List[Sequence[Any]]]]:
        width = len(self.columns)
        reader = self._reader()
        seen = 0  # records read so far, the header included
        try:
            for raw in iter(lambda: list(islice(reader, size)), []):
                rows = list(filter(None, raw))  # blank lines are empty lists
                first = seen
                seen += len(rows)
                if first == 0 and rows:
                    rows = rows[1:]  # the header
                    first = 1
                if set(map(len, rows)) - {width}:
                    rows = [self._fit(row, width, first + k) for k, row in enumerate(rows)]
                if rows:
                    yield len(rows), (list(zip(*rows)) if width else [])
        except csv.Error as err:
            raise kit.ToolError(
                "parse_error",
                f"{self.path}, line {reader.line_num}: {err}",
                {"line": reader.line_num},
            ) from None

    def _fit(self, row: List[str], width: int, record: int) -> List[str]:
        """A row padded with empty cells, or cut of trailing empty fields;
        ``parse_error`` when it has more values than the header has columns."""
        if len(row) < width:
            return row + [""] * (width - len(row))
        if len(row) > width and any(cell.strip() for cell in row[width:]):
            line = self._line_of(record)
            raise kit.ToolError(
                "parse_error",
                f"{self.path}, line {line}: {len(row)} fields, but the header has {width} columns",
                {"line": line},
            )
        return row[:width]

    def _line_of(self, record: int) -> int:
        """The line where non-blank record number ``record`` (0: the header)
        ends. Only for error messages: it parses the text again."""
        reader = self._reader()
        for k, _ in enumerate(filter(None, reader)):
            if k == record:
                break
        return reader.line_num

    def _reader(self):
        return csv.reader(io.StringIO(self._text, newline=""), delimiter=self._delimiter)


def detect_format(path: str, explicit: Optional[str]) -> str:
    """The format named by the caller, else the one the extension says."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise kit.ToolError.invalid_arguments(f"format must be one of {', '.join(FORMATS)}")
        return explicit
    ext = os.path.splitext(path)[1].lower()
    fmt = _EXTENSIONS.get(ext)
    if fmt is None:
        raise kit.ToolError(
            "unsupported_format",
            f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"use a .csv, .tsv, .json or .jsonl file, or pass `format`",
            {"extensions": sorted(_EXTENSIONS)},
        )
    return fmt


def load(path: str, fmt: Optional[str] = None) -> Table:
    """Reads the table at ``path`` (a path argument, as the caller gave it)."""
    fmt = detect_format(path, fmt)
    text = _read_text(path)
    if fmt in ("csv", "tsv"):
        return _load_csv(path, fmt, text)
    records = _parse_jsonl(path, text) if fmt == "jsonl" else _parse_json(path, text)
    return Table(path, fmt, _json_columns(records), records=records)


def _read_text(path: str) -> str:
    resolved = kit.resolve_path(path)
    try:
        with open(resolved, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise kit.ToolError(
                    "file_too_large",
                    f"{path} is {size} bytes; this tool reads files up to {MAX_FILE_BYTES} bytes",
                    {"size": size, "limit": MAX_FILE_BYTES},
                )
            data = f.read()
    except OSError as err:
        raise kit.ToolError.from_os_error(err, path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise kit.ToolError(
            "not_utf8",
            f"{path} is not UTF-8 text (invalid byte at offset {err.start})",
            {"offset": err.start},
        ) from None
    return text[1:] if text.startswith("\ufeff") else text  # a byte order mark


def _load_csv(path: str, fmt: str, text: str) -> Table:
    first_line = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = "\t" if fmt == "tsv" else _guess_delimiter(first_line)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(filter(None, reader), [])  # the first non-blank record
    except csv.Error as err:
        raise kit.ToolError(
            "parse_error", f"{path}, line {reader.line_num}: {err}", {"line": reader.line_num}
        ) from None
    return Table(path, fmt, _column_names(header), text=text, delimiter=delimiter)


def _guess_delimiter(line: str) -> str:
    counts = {d: line.count(d) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: counts[d])  # ties: the earlier one
    return best if counts[best] else ","


def _column_names(header: List[str]) -> List[str]:
    """Header cells as column names: blank ones become ``column_N``
    (1-based), repeated ones get ``_2``, ``_3``, ..."""
    names: List[str] = []
    seen = set()
    for i, raw in enumerate(header, start=1):
        base = raw.strip() or f"column_{i}"
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}_{n}"
        seen.add(name)
        names.append(name)
    return names


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _parse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=_parse_float, parse_constant=_parse_constant)


def _parse_json(path: str, text: str) -> List[Dict[str, Any]]:
    try:
        doc = _loads(text)
    except json.JSONDecodeError as err:
        raise kit.ToolError(
            "parse_error",
            f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
            {"line": err.lineno, "column": err.colno},
        ) from None
    except ValueError as err:
        raise kit.ToolError("parse_error", f"{path}: {err}") from None
    if not isinstance(doc, list):
        raise kit.ToolError(
            "unsupported_format",
            f"{path}: the JSON document is {_json_type(doc)}; this tool reads an array of objects "
            "(or JSON Lines: one object per line, in a .jsonl file)",
        )
    for i, item in enumerate(doc):
        if not isinstance(item, dict):
            raise kit.ToolError(
                "unsupported_format",
                f"{path}: element {i} of the array is {_json_type(item)}; every element must be an object",
                {"index": i},
            )
    return doc


def _parse_jsonl(path: str, text: str) -> List[Dict[str, Any]]:
    records = []
    # Split on newlines only: str.splitlines() also splits on U+2028 and
    # other separators, which JSON strings may hold unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = _loads(line)
        except json.JSONDecodeError as err:
            raise kit.ToolError(
                "parse_error",
                f"{path}, line {number}: invalid JSON at column {err.colno}: {err.msg}",
                {"line": number, "column": err.colno},
            ) from None
        except ValueError as err:
            raise kit.ToolError("parse_error", f"{path}, line {number}: {err}", {"line": number}) from None
        if not isinstance(item, dict):
            raise kit.ToolError(
                "unsupported_format",
                f"{path}, line {number}: {_json_type(item)}; every line must be a JSON object",
                {"line": number},
            )
        records.append(item)
    return records


def _json_columns(records: List[Dict[str, Any]]) -> List[str]:
    columns: Dict[str, None] = {}
    for record in records:
        for key in record:
            columns.setdefault(key, None)
    return list(columns)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
