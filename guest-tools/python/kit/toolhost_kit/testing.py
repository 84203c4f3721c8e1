"""Native test helpers: run a tool the way the host runs it.

:func:`call` checks the arguments against the tool's input schema (the
host's ``invalid_arguments``), runs ``execute``, checks the value against the
output schema (the host's ``output_invalid``), then renders it, all with new
imports forbidden, as they are inside a component (see :func:`no_new_imports`).
Schema checks use ``jsonschema`` (requirements-test.txt); without it they are
skipped with a warning.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import json
import sys
import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import toolhost_kit as kit

try:
    import jsonschema
except ImportError:  # pragma: no cover - depends on the environment
    jsonschema = None


class _ImportsForbidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # noqa: D102 - importlib protocol
        raise ImportError(
            f"module {name!r} was first imported while a tool ran; inside a component that "
            "fails (modules load at build time only): import it at module level"
        )


@contextlib.contextmanager
def no_new_imports() -> Iterator[None]:
    """Forbids importing any module not imported yet, as in a component.

    componentize-py snapshots the modules imported at build time and ships
    no Python library files, so a module first imported during a call (a
    lazy ``import`` inside a function, in your code or in the standard
    library's, e.g. ``heapq`` in ``Counter.most_common``) is not found.
    The native interpreter may be another Python version than the
    component's, so this catches most such imports, not all.
    """
    finder = _ImportsForbidden()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class OutputInvalid(AssertionError):
    """The value does not match the tool's output schema."""


def validate(schema: Mapping[str, Any], instance: Any) -> List[str]:
    """The messages of ``instance``'s violations of ``schema`` (draft
    2020-12), empty when it conforms or when jsonschema is missing."""
    if jsonschema is None:
        warnings.warn("jsonschema is not installed: schema checks skipped", stacklevel=2)
        return []
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def check_schemas(tool: kit.Tool) -> None:
    """Raises when a schema of ``tool`` is not a valid draft 2020-12 schema."""
    if jsonschema is None:
        return
    for schema in (tool.input_schema, tool.output_schema):
        jsonschema.Draft202012Validator.check_schema(schema)


def call(
    toolset: kit.Toolset, name: str, args: Dict[str, Any]
) -> Tuple[Any, Optional[List[kit.Content]]]:
    """Runs tool ``name`` on ``args`` as the host would; returns the value
    and the rendered content (``None``: the host would render).

    Raises :class:`toolhost_kit.ToolError` for a failure (``invalid_arguments``
    when the arguments violate the input schema) and :class:`OutputInvalid`
    when the value violates the output schema.
    """
    tool = toolset.get(name)
    errors = validate(tool.input_schema, args)
    if errors:
        raise kit.ToolError.invalid_arguments("; ".join(errors))
    arguments = json.dumps(args)
    with no_new_imports():
        text = toolset.execute_json(name, arguments)
    value = json.loads(text)
    errors = validate(tool.output_schema, value)
    if errors:
        raise OutputInvalid(f"{name}: " + "; ".join(errors))
    with no_new_imports():
        content = toolset.render_json(name, arguments, text)
    return value, content


def text_of(content: Optional[List[kit.Content]]) -> str:
    """The text blocks of ``content``, joined by blank lines."""
    return "\n\n".join(c.text for c in content or [] if isinstance(c, kit.Text))
