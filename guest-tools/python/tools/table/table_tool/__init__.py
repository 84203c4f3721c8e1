"""``table``: read-only data tools over CSV, TSV, JSON and JSON Lines files.

- ``table_schema``: columns, inferred types, empty cells, examples, row count;
- ``table_stats``: per-column statistics (numeric summaries, frequent values);
- ``table_filter``: the rows meeting a set of conditions, paged.

Modules: :mod:`.loader` reads files, :mod:`.cells` infers types and compares
values, :mod:`.analysis` computes the values, :mod:`.render` renders them for
the model, :mod:`.tools` declares the tools. Nothing here imports the
component bindings: everything runs natively under ``unittest``.
"""

from .tools import TOOLSET

__all__ = ["TOOLSET"]
