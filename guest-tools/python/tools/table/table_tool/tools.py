"""The tools: ``table_schema``, ``table_stats`` and ``table_filter``, with
their JSON Schemas, their argument handling and :data:`TOOLSET`.

The host validates the arguments against the input schema before a tool
runs; the checks here repeat what the code relies on, so the functions are
also safe to call directly (the unit tests do).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import toolhost_kit as kit

from . import analysis, cells, loader, render

# ── argument schemas ─────────────────────────────────────────────────────

MAX_CONDITIONS = 20
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
DEFAULT_TOP = 5
MAX_TOP = 50

_PATH = {
    "type": "string",
    "minLength": 1,
    "description": (
        "The table file: .csv, .tsv, .json (an array of objects) or .jsonl (one object per "
        "line). Relative paths are relative to the working directory, e.g. `data/sales.csv`."
    ),
}
_FORMAT = {
    "enum": list(loader.FORMATS),
    "description": "The file's format, when its extension does not tell it.",
}
_CONDITION = kit.object_schema(
    {
        "column": {"type": "string", "description": "A column name, as table_schema lists it."},
        "op": {
            "enum": list(cells.OPERATORS),
            "description": (
                "eq, ne, lt, le, gt, ge compare: numbers numerically (numeric text included), "
                "booleans as booleans, text as text (case-sensitive, so ISO dates order "
                "correctly). contains: case-insensitive substring of the cell's text."
            ),
        },
        "value": {
            "type": ["string", "number", "boolean", "null"],
            "description": "What to compare with; null stands for an empty cell (eq and ne only).",
        },
    },
    required=["column", "op", "value"],
    root=False,
)

# ── output schemas ───────────────────────────────────────────────────────

_COLUMN_TYPE = {
    "enum": list(cells.COLUMN_TYPES),
    "description": (
        "integer, number, boolean, string; empty: no value at all; JSON only: array, object, "
        "mixed (values of several kinds)."
    ),
}
_ANY = {"description": "A cell value: number, boolean, string, null, or (JSON files) array or object."}
_COUNT = {"type": "integer", "minimum": 0}
_NUMBER_OR_NULL = {"type": ["number", "null"]}


def _output(properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    base = {
        "path": {"type": "string", "description": "The path, as given."},
        "format": {"enum": list(loader.FORMATS)},
        "rows": {**_COUNT, "description": "Data rows in the file (the header excluded)."},
    }
    base.update(properties)
    return kit.object_schema(base, ["path", "format", *required])


# ── table_schema ─────────────────────────────────────────────────────────


def table_schema(args: Dict[str, Any]) -> Dict[str, Any]:
    path = _path(args)
    table = loader.load(path, _format(args))
    return {"path": path, "format": table.format, **analysis.schema(table)}


TABLE_SCHEMA = kit.Tool(
    name="table_schema",
    title="Table schema",
    description=(
        "Describes a CSV, TSV, JSON or JSON Lines table file: its row count and, per column, "
        "the inferred type (integer, number, boolean, string, or empty when it has no value), "
        "how many cells are empty, and a few example values. Use it first, to learn the "
        "column names that table_stats and table_filter take."
    ),
    input_schema=kit.object_schema(
        {"path": _PATH, "format": _FORMAT},
        required=["path"],
    ),
    output_schema=_output(
        {
            "columns": {
                "type": "array",
                "items": kit.object_schema(
                    {
                        "name": {"type": "string"},
                        "type": _COLUMN_TYPE,
                        "empty": {**_COUNT, "description": "Empty cells (missing or null in JSON)."},
                        "examples": {"type": "array", "items": _ANY, "maxItems": analysis.EXAMPLES},
                    },
                    required=["name", "type", "empty", "examples"],
                    root=False,
                ),
            },
        },
        ["rows", "columns"],
    ),
    execute=table_schema,
    render=render.render_schema,
    annotations=kit.Annotations(read_only=True, idempotent=True),
    paths=[kit.PathParam("/path", "read")],
)

# ── table_stats ──────────────────────────────────────────────────────────


def table_stats(args: Dict[str, Any]) -> Dict[str, Any]:
    path = _path(args)
    columns = _names(args, "columns")
    top = _int(args, "top", DEFAULT_TOP, 1, MAX_TOP)
    table = loader.load(path, _format(args))
    return {"path": path, "format": table.format, **analysis.stats(table, columns, top)}


TABLE_STATS = kit.Tool(
    name="table_stats",
    title="Table column statistics",
    description=(
        "Summarizes the columns of a CSV, TSV, JSON or JSON Lines table file. Numeric columns: "
        "count, empty cells, distinct values, min, max, sum, mean, median and sample standard "
        "deviation. Other columns: count, empty cells, distinct values and the most frequent "
        "values with their counts."
    ),
    input_schema=kit.object_schema(
        {
            "path": _PATH,
            "format": _FORMAT,
            "columns": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "The columns to summarize (default: all).",
            },
            "top": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TOP,
                "default": DEFAULT_TOP,
                "description": "How many most frequent values to list per non-numeric column.",
            },
        },
        required=["path"],
    ),
    output_schema=_output(
        {
            "columns": {
                "type": "array",
                "items": kit.object_schema(
                    {
                        "name": {"type": "string"},
                        "type": _COLUMN_TYPE,
                        "count": {**_COUNT, "description": "Non-empty cells."},
                        "empty": _COUNT,
                        "distinct": {**_COUNT, "description": "Distinct non-empty values."},
                        "min": _NUMBER_OR_NULL,
                        "max": _NUMBER_OR_NULL,
                        "sum": _NUMBER_OR_NULL,
                        "mean": _NUMBER_OR_NULL,
                        "median": _NUMBER_OR_NULL,
                        "stddev": {
                            **_NUMBER_OR_NULL,
                            "description": "Sample standard deviation; null below two values.",
                        },
                        "top": {
                            "type": "array",
                            "items": kit.object_schema(
                                {"value": _ANY, "count": {"type": "integer", "minimum": 1}},
                                required=["value", "count"],
                                root=False,
                            ),
                            "description": "Most frequent values, most frequent first (non-numeric columns).",
                        },
                    },
                    required=["name", "type", "count", "empty", "distinct"],
                    root=False,
                ),
            },
        },
        ["rows", "columns"],
    ),
    execute=table_stats,
    render=render.render_stats,
    annotations=kit.Annotations(read_only=True, idempotent=True),
    paths=[kit.PathParam("/path", "read")],
)

# ── table_filter ─────────────────────────────────────────────────────────


def table_filter(args: Dict[str, Any]) -> Dict[str, Any]:
    path = _path(args)
    where = _conditions(args)
    columns = _names(args, "columns")
    offset = _int(args, "offset", 0, 0, None)
    limit = _int(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    table = loader.load(path, _format(args))
    value = analysis.filter_rows(table, where, columns, offset, limit)
    return {"path": path, "format": table.format, **value}


TABLE_FILTER = kit.Tool(
    name="table_filter",
    title="Filter table rows",
    description=(
        "Returns the rows of a CSV, TSV, JSON or JSON Lines table file that meet every "
        "condition in `where` (all must hold), as objects keyed by column name, in file order. "
        "Numeric, boolean and empty cells come back typed (numbers, true/false, null). Gives "
        "the total number of matching rows and pages through them with offset and limit "
        f"(default {DEFAULT_LIMIT}, at most {MAX_LIMIT})."
    ),
    input_schema=kit.object_schema(
        {
            "path": _PATH,
            "format": _FORMAT,
            "where": {
                "type": "array",
                "items": _CONDITION,
                "maxItems": MAX_CONDITIONS,
                "description": "Conditions every returned row meets (default: none, every row).",
            },
            "columns": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "The columns to return, in this order (default: all).",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "Matching rows to skip, to page through the matches.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "Most rows to return.",
            },
        },
        required=["path"],
    ),
    output_schema=_output(
        {
            "columns": {"type": "array", "items": {"type": "string"}, "description": "The columns of each row, in order."},
            "rows": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": _ANY},
                "description": "The matching rows of this page.",
            },
            "total_rows": {**_COUNT, "description": "Data rows in the file."},
            "matched": {**_COUNT, "description": "Rows meeting every condition, across all pages."},
            "offset": _COUNT,
            "truncated": {
                "type": "boolean",
                "description": "More matching rows follow this page: call again with a larger offset.",
            },
        },
        ["columns", "rows", "total_rows", "matched", "offset", "truncated"],
    ),
    execute=table_filter,
    render=render.render_filter,
    annotations=kit.Annotations(read_only=True, idempotent=True),
    paths=[kit.PathParam("/path", "read")],
)

#: The tools of the component, in the order they are listed.
TOOLSET = kit.Toolset([TABLE_SCHEMA, TABLE_STATS, TABLE_FILTER])

# ── argument handling ────────────────────────────────────────────────────


def _path(args: Dict[str, Any]) -> str:
    path = args.get("path")
    if not isinstance(path, str) or not path:
        raise kit.ToolError.invalid_arguments("`path` must be a non-empty string")
    return path


def _format(args: Dict[str, Any]) -> Optional[str]:
    fmt = args.get("format")
    if fmt is not None and fmt not in loader.FORMATS:
        raise kit.ToolError.invalid_arguments(f"`format` must be one of {', '.join(loader.FORMATS)}")
    return fmt


def _names(args: Dict[str, Any], key: str) -> Optional[List[str]]:
    names = args.get(key)
    if names is None:
        return None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise kit.ToolError.invalid_arguments(f"`{key}` must be a non-empty array of column names")
    return names


def _int(args: Dict[str, Any], key: str, default: int, low: int, high: Optional[int]) -> int:
    value = args.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 50.0 is 50
    if not isinstance(value, int) or isinstance(value, bool):
        raise kit.ToolError.invalid_arguments(f"`{key}` must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise kit.ToolError.invalid_arguments(f"`{key}` must be {bound}, not {value}")
    return value


def _conditions(args: Dict[str, Any]) -> List[analysis.Condition]:
    where = args.get("where", [])
    if not isinstance(where, list):
        raise kit.ToolError.invalid_arguments("`where` must be an array of conditions")
    if len(where) > MAX_CONDITIONS:
        raise kit.ToolError.invalid_arguments(f"`where` takes at most {MAX_CONDITIONS} conditions")
    out = []
    for n, item in enumerate(where):
        if not isinstance(item, dict) or not {"column", "op", "value"} <= item.keys():
            raise kit.ToolError.invalid_arguments(
                f"where[{n}] must be an object with column, op and value"
            )
        column, op, value = item["column"], item["op"], item["value"]
        if not isinstance(column, str):
            raise kit.ToolError.invalid_arguments(f"where[{n}].column must be a column name")
        if op not in cells.OPERATORS:
            raise kit.ToolError.invalid_arguments(
                f"where[{n}].op must be one of {', '.join(cells.OPERATORS)}"
            )
        if isinstance(value, (list, dict)):
            raise kit.ToolError.invalid_arguments(f"where[{n}].value must be a string, number, boolean or null")
        out.append(analysis.Condition(column, op, value))
    return out
