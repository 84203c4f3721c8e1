"""Cell values: their kinds, the column types inferred from them, and how
cells compare with the values of a filter condition.

A CSV cell is text; its kind is read from the text:

- ``empty``: nothing but whitespace;
- ``integer``: ``-12``, ``+7``, ``0`` (but not ``007``: a leading zero keeps
  identifiers such as ZIP codes as text);
- ``number``: ``3.5``, ``-.5``, ``1e-3`` (finite; no ``nan``/``inf``, no
  thousands separators);
- ``boolean``: ``true`` or ``false``, in any case;
- ``string``: anything else.

A JSON value's kind is its JSON type (``null`` and a missing key are
``empty``; a string stays a ``string`` whatever it holds; arrays and objects
are ``array`` and ``object``).

A column's type is the kind all its non-empty cells share, with ``integer``
widening to ``number``; a CSV column whose cells disagree is ``string`` (they
are all text), a JSON column is ``mixed``; a column with no value is
``empty``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, Optional, Sequence

EMPTY = "empty"
INTEGER = "integer"
NUMBER = "number"
BOOLEAN = "boolean"
STRING = "string"
ARRAY = "array"
OBJECT = "object"
MIXED = "mixed"

#: Every column type, as the output schemas list them.
COLUMN_TYPES = (INTEGER, NUMBER, BOOLEAN, STRING, EMPTY, ARRAY, OBJECT, MIXED)
#: Column types whose values are numbers.
NUMERIC_TYPES = (INTEGER, NUMBER)

_INTEGER_RE = re.compile(r"[+-]?(?:0|[1-9][0-9]*)\Z")
_NUMBER_RE = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
# Looser, for comparisons only: "007" compares as 7 with a number.
_LOOSE_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


# The same kinds over a whole chunk of cells joined by newlines, so that a
# numeric column is checked by one regex search instead of a Python call per
# cell (exponents and very long numbers excluded: whether they are finite
# floats needs a look at each).
_INT_TOKEN = r"[ \t]*[+-]?(?:0|[1-9][0-9]*)[ \t]*"
_NUM_TOKEN = r"[ \t]*[+-]?(?:(?:0|[1-9][0-9]{0,200})(?:\.[0-9]{0,200})?|\.[0-9]{1,200})[ \t]*"
_INTEGER_LINES = re.compile(f"(?:{_INT_TOKEN}\n)*{_INT_TOKEN}\\Z")
_NUMBER_LINES = re.compile(f"(?:{_NUM_TOKEN}\n)*{_NUM_TOKEN}\\Z")


def all_of_kind(texts: Sequence[str], kind: str) -> bool:
    """Whether every text is a non-empty cell of ``kind`` (``integer``, or
    ``number``, which includes integers), checked in one regex match: a
    fast path for numeric columns. ``False`` means "not known", not "no"."""
    pattern = _INTEGER_LINES if kind == INTEGER else _NUMBER_LINES if kind == NUMBER else None
    if pattern is None or not texts:
        return False
    joined = "\n".join(texts)
    # A cell holding a newline would pass for two cells.
    return joined.count("\n") == len(texts) - 1 and pattern.match(joined) is not None


def text_kind(text: str) -> str:
    """The kind of a CSV cell."""
    s = text.strip()
    if not s:
        return EMPTY
    if _INTEGER_RE.match(s):
        return INTEGER
    if _NUMBER_RE.match(s) and math.isfinite(float(s)):
        return NUMBER
    if s.lower() in ("true", "false"):
        return BOOLEAN
    return STRING


#: The kind of each type ``json.loads`` returns (``NoneType``: null).
KIND_OF_TYPE = {
    type(None): EMPTY,
    bool: BOOLEAN,
    int: INTEGER,
    float: NUMBER,
    str: STRING,
    list: ARRAY,
    dict: OBJECT,
}


def value_kind(value: Any) -> str:
    """The kind of a JSON value (``None`` for null or missing)."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        return ARRAY
    return OBJECT


def column_type(kinds: Iterable[str], *, textual: bool) -> str:
    """The type of a column whose non-empty cells have ``kinds``.

    ``textual`` is true for CSV, where cells that disagree are all text.
    """
    present = set(kinds)
    present.discard(EMPTY)
    if not present:
        return EMPTY
    if present <= {INTEGER, NUMBER}:
        return NUMBER if NUMBER in present else INTEGER
    if len(present) == 1:
        return present.pop()
    return STRING if textual else MIXED


def convert_text(text: str, col_type: str) -> Any:
    """A CSV cell as the value of a column of type ``col_type``: numbers for
    numeric columns, booleans for boolean columns, ``None`` for empty cells,
    the text as it is otherwise."""
    s = text.strip()
    if not s:
        return None
    if col_type == INTEGER:
        return int(s)
    if col_type == NUMBER:
        return int(s) if _INTEGER_RE.match(s) else float(s)
    if col_type == BOOLEAN:
        return s.lower() == "true"
    return text


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or a float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_text(value: Any) -> str:
    """A value as text: strings as they are, other values as compact JSON
    (``true``, ``2.5``, ``[1,2]``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_number(value: Any) -> Optional[float]:
    """``value`` as a number: numbers as they are, numeric text parsed
    (``"007"`` is 7), anything else (booleans too) ``None``."""
    if is_number(value):
        return value
    if isinstance(value, str):
        s = value.strip()
        if _LOOSE_NUMBER_RE.match(s):
            n = float(s)
            if math.isfinite(n):
                return int(s) if s.lstrip("+-").isdigit() else n
    return None


def _as_bool(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def compare(cell: Any, value: Any) -> Optional[int]:
    """Compares a non-null cell with a non-null condition value: -1, 0 or 1,
    or ``None`` when they cannot be compared.

    A boolean on either side compares as a boolean (``"true"`` text
    included), a number on either side compares numerically (numeric text
    included; other text does not compare), and two texts compare as text
    (case-sensitive; ISO dates order correctly).
    """
    if isinstance(cell, bool) or isinstance(value, bool):
        a: Any = _as_bool(cell)
        b: Any = _as_bool(value)
    elif is_number(cell) or is_number(value):
        a, b = as_number(cell), as_number(value)
    else:
        a, b = as_text(cell), as_text(value)
    if a is None or b is None:
        return None
    return (a > b) - (a < b)


#: The operators of a filter condition.
OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "contains")


def matches(cell: Any, op: str, value: Any) -> bool:
    """Whether ``cell`` meets the condition ``op value``.

    An empty cell (``None``) equals only ``null`` and meets no other
    condition but ``ne``; ``contains`` is a case-insensitive substring test
    on the cell's text; ``ne`` holds for cells that do not compare with the
    value at all.
    """
    if cell is None or value is None:
        if op == "eq":
            return cell is None and value is None
        if op == "ne":
            return not (cell is None and value is None)
        return False
    if op == "contains":
        return as_text(value).casefold() in as_text(cell).casefold()
    c = compare(cell, value)
    if op == "eq":
        return c == 0
    if op == "ne":
        return c != 0
    if c is None:
        return False
    if op == "lt":
        return c < 0
    if op == "le":
        return c <= 0
    if op == "gt":
        return c > 0
    if op == "ge":
        return c >= 0
    raise ValueError(f"unknown operator {op!r}")
