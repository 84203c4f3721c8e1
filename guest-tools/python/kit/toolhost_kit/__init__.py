"""Authoring kit for toolhost tool components written in Python.

A tool is a plain Python function from an arguments ``dict`` to a
JSON-serializable value, declared with a :class:`Tool` (name, description,
JSON Schemas, annotations, path arguments) and grouped in a :class:`Toolset`,
for the contract ``toolhost:tool@0.3.0``. While it runs, a tool may report
progress, log, and ask whether its call was cancelled through :func:`ctx`
(see :mod:`toolhost_kit.context`).
This module is pure Python and imports nothing from the component bindings,
so tool logic and the kit are unit-tested natively; the WIT plumbing lives in
:mod:`toolhost_kit.component`, which the component's entry module uses::

    # app.py, the module componentize-py builds
    from toolhost_kit.component import export
    from my_tool import TOOLSET

    Tool = export(TOOLSET)  # the class componentize-py exports as `tool`

A tool::

    import toolhost_kit as kit

    def count_lines(args):
        path = kit.resolve_path(args["path"])  # always, for every path argument
        try:
            with open(path, "rb") as f:
                return {"lines": sum(1 for _ in f)}
        except OSError as err:
            raise kit.ToolError.from_os_error(err, args["path"]) from None

    COUNT_LINES = kit.Tool(
        name="count_lines",
        description="Counts the lines of a file.",
        input_schema=kit.object_schema({"path": {"type": "string"}}, required=["path"]),
        output_schema=kit.object_schema({"lines": {"type": "integer"}}, required=["lines"]),
        execute=count_lines,
        render=lambda args, value: [kit.Text(f"{value['lines']} lines")],
        annotations=kit.Annotations(read_only=True, idempotent=True),
        paths=[kit.PathParam("/path", "read")],
    )
    TOOLSET = kit.Toolset([COUNT_LINES])

Rules of the road inside a component (componentize-py pre-initializes the
module at build time and ships no file system with the Python library):

- import every module you need at module level: a module first imported
  while a call runs is not found;
- do not touch the file system or the clock at import time (it runs at
  build time, and the snapshot is what every call starts from);
- failures the model should see are :class:`ToolError` with a stable
  snake_case code; any other exception becomes ``internal_error``.

A tool that renders nothing itself says ``host_renders=True`` (and has no
``render``): the host then renders its value and never calls ``render``,
which saves a second instance per call.

Native tests run tools the way the host does with :mod:`toolhost_kit.testing`;
what a tool reported through :func:`ctx` is in :func:`take_reports`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from toolhost_kit.context import (
    LOG_LEVELS,
    ContextBackend,
    Ctx,
    Log,
    LogLevel,
    Progress,
    Report,
    cancel_for_test,
    ctx,
    set_context_backend,
    take_reports,
)

__all__ = [
    "LOG_LEVELS",
    "PATH_ACCESSES",
    "SCHEMA_DIALECT",
    "Annotations",
    "Audio",
    "Content",
    "ContextBackend",
    "Ctx",
    "Image",
    "Log",
    "LogLevel",
    "PathParam",
    "Progress",
    "Report",
    "Resource",
    "ResourceBlob",
    "ResourceContents",
    "ResourceLink",
    "ResourceText",
    "Text",
    "Tool",
    "ToolError",
    "Toolset",
    "cancel_for_test",
    "ctx",
    "dumps",
    "initial_cwd",
    "object_schema",
    "resolve_path",
    "set_context_backend",
    "set_initial_cwd_provider",
    "take_reports",
]

#: The JSON Schema dialect the host expects (draft 2020-12).
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: Tool names, as the contract requires: ``[a-z][a-z0-9_]*``, at most 64 bytes.
_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")

#: Error codes: stable snake_case strings.
_CODE_RE = re.compile(r"[a-z][a-z0-9_]*\Z")

#: The WIT `path-access` cases.
PATH_ACCESSES = ("read", "list", "create", "overwrite", "patch", "write")


class ToolError(Exception):
    """A failure the tool reports itself (the WIT ``tool-failure``).

    ``code`` is a stable snake_case string a model (and a program) can rely
    on, ``message`` says what to do about it, ``info`` is optional
    JSON-serializable detail.
    """

    def __init__(self, code: str, message: str, info: Any = None) -> None:
        if not _CODE_RE.match(code):
            raise ValueError(f"error code {code!r} is not snake_case")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.info = info

    @classmethod
    def invalid_arguments(cls, message: str, info: Any = None) -> "ToolError":
        """``invalid_arguments``: the arguments are well-formed but unusable."""
        return cls("invalid_arguments", message, info)

    @classmethod
    def from_os_error(cls, err: OSError, path: str) -> "ToolError":
        """Maps an I/O error on ``path`` (as the caller gave it) to a failure:
        ``not_found``, ``is_directory``, ``not_a_directory``,
        ``permission_denied``, or ``io_error`` for anything else."""
        if isinstance(err, FileNotFoundError):
            return cls("not_found", f"{path} does not exist")
        if isinstance(err, IsADirectoryError):
            return cls("is_directory", f"{path} is a directory, not a file")
        if isinstance(err, NotADirectoryError):
            return cls("not_a_directory", f"{path}: a component of the path is not a directory")
        if isinstance(err, PermissionError):
            return cls("permission_denied", f"{path}: permission denied")
        return cls(
            "io_error",
            f"{path}: {err.strerror or err}",
            {"errno": err.errno},
        )


@dataclass(frozen=True)
class Annotations:
    """Behaviour hints, as in MCP tool annotations (all false by default)."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


@dataclass(frozen=True)
class PathParam:
    """A declared path argument: the host checks it against the policy's
    grants before the tool runs.

    ``pointer`` is a JSON Pointer into the arguments (``/path``); ``access``
    is one of ``read``, ``list``, ``create``, ``overwrite``, ``patch``,
    ``write`` (see the WIT's ``path-access``).
    """

    pointer: str
    access: str = "read"

    def __post_init__(self) -> None:
        if not self.pointer.startswith("/"):
            raise ValueError(f"path pointer {self.pointer!r} must start with '/'")
        if self.access not in PATH_ACCESSES:
            raise ValueError(f"path access {self.access!r} is not one of {PATH_ACCESSES}")


@dataclass(frozen=True)
class Text:
    """A block of text for the model."""

    text: str


@dataclass(frozen=True)
class Image:
    """An image for the model: base64 data and its media type."""

    data: str
    mime_type: str


@dataclass(frozen=True)
class ResourceLink:
    """A link to a resource the model can ask for separately."""

    uri: str
    name: str
    mime_type: Optional[str] = None
    description: Optional[str] = None


@dataclass(frozen=True)
class Audio:
    """Audio for the model: base64 data and its media type (e.g. ``audio/wav``)."""

    data: str
    mime_type: str


@dataclass(frozen=True)
class ResourceText:
    """The contents of an embedded resource: text."""

    text: str


@dataclass(frozen=True)
class ResourceBlob:
    """The contents of an embedded resource: base64 of binary content."""

    data: str


#: What an embedded resource holds.
ResourceContents = Union[ResourceText, ResourceBlob]


@dataclass(frozen=True)
class Resource:
    """A resource's contents, embedded in the result (the WIT
    ``embedded-resource``): its URI, its contents (:class:`ResourceText` or
    :class:`ResourceBlob`) and its media type when known. See
    :meth:`Resource.of_text` and :meth:`Resource.of_blob`."""

    uri: str
    contents: ResourceContents
    mime_type: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.contents, (ResourceText, ResourceBlob)):
            raise TypeError(f"resource {self.uri}: contents must be ResourceText or ResourceBlob, not {self.contents!r}")

    @classmethod
    def of_text(cls, uri: str, text: str, mime_type: Optional[str] = None) -> "Resource":
        """A resource holding ``text``."""
        return cls(uri, ResourceText(text), mime_type)

    @classmethod
    def of_blob(cls, uri: str, data: str, mime_type: Optional[str] = None) -> "Resource":
        """A resource holding binary content, ``data`` in base64."""
        return cls(uri, ResourceBlob(data), mime_type)


#: One block of what the model reads.
Content = Union[Text, Image, ResourceLink, Audio, Resource]

#: ``execute(args) -> value``.
ExecuteFn = Callable[[Dict[str, Any]], Any]
#: ``render(args, value) -> content or None`` (``None``: the host renders).
RenderFn = Callable[[Dict[str, Any], Any], Optional[List[Content]]]


@dataclass(frozen=True)
class Tool:
    """One tool: its declaration and its functions.

    ``input_schema`` and ``output_schema`` are JSON Schemas (draft 2020-12)
    as dicts; the host validates the arguments against the first before
    ``execute`` runs and the value against the second after. ``render`` must
    be pure: it runs in a fresh instance that sees only the arguments and the
    value.

    ``host_renders`` says the tool renders nothing itself (it then has no
    ``render``): the host renders the value and never calls ``render``, so a
    call needs one instance instead of two under the default policy.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    execute: ExecuteFn
    render: Optional[RenderFn] = None
    title: Optional[str] = None
    annotations: Annotations = field(default_factory=Annotations)
    paths: Sequence[PathParam] = ()
    urls: Sequence[str] = ()
    host_renders: bool = False

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match [a-z][a-z0-9_]*, at most 64 bytes")
        for which, schema in (("input", self.input_schema), ("output", self.output_schema)):
            if not isinstance(schema, Mapping):
                raise ValueError(f"tool {self.name}: the {which} schema must be a dict")
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name}: the input schema must describe an object")
        for pointer in self.urls:
            if not pointer.startswith("/"):
                raise ValueError(f"tool {self.name}: URL pointer {pointer!r} must start with '/'")
        if self.host_renders and self.render is not None:
            raise ValueError(f"tool {self.name}: a tool with host_renders has no render (the host never calls it)")


class Toolset:
    """The tools of one component, dispatched by name.

    This is what :func:`toolhost_kit.component.export` exports; tests call
    :meth:`execute_json` and :meth:`render_json` directly, which run exactly
    the code the component runs.
    """

    def __init__(self, tools: Sequence[Tool]) -> None:
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        self._tools: Dict[str, Tool] = {t.name: t for t in tools}

    @property
    def tools(self) -> List[Tool]:
        """The tools, in declaration order."""
        return list(self._tools.values())

    def get(self, name: str) -> Tool:
        """Tool ``name``; ``unknown_tool`` when there is none."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError("unknown_tool", f"this component has no tool named {name!r}")
        return tool

    def execute_json(self, name: str, arguments: str) -> str:
        """Runs tool ``name`` on an arguments JSON document and returns the
        value as a JSON document.

        Raises :class:`ToolError`: the tool's own, ``unknown_tool``,
        ``invalid_arguments`` when the arguments are not a JSON object, and
        ``internal_error`` for any other exception (a bug in the tool).
        """
        tool = self.get(name)
        args = _parse_arguments(arguments)
        try:
            value = tool.execute(args)
            return dumps(value)
        except ToolError:
            raise
        except MemoryError:
            raise ToolError("out_of_memory", "the tool ran out of memory") from None
        except Exception as err:  # a bug: report it instead of trapping
            raise ToolError("internal_error", f"{type(err).__name__}: {err}") from None

    def render_json(self, name: str, arguments: str, value: str) -> Optional[List[Content]]:
        """Renders a value of tool ``name`` given as JSON documents.

        ``None`` (the host renders the value) when the tool has no renderer,
        the tool is unknown, or either document does not decode. Exceptions
        from the renderer propagate: they are bugs, and the host reports
        them as ``render_failed``.
        """
        tool = self._tools.get(name)
        if tool is None or tool.render is None:
            return None
        try:
            args = json.loads(arguments)
            decoded = json.loads(value)
        except ValueError:
            return None
        if not isinstance(args, dict):
            return None
        return tool.render(args, decoded)


def _parse_arguments(arguments: str) -> Dict[str, Any]:
    try:
        args = json.loads(arguments)
    except ValueError as err:
        raise ToolError.invalid_arguments(f"the arguments are not JSON: {err}") from None
    if not isinstance(args, dict):
        raise ToolError.invalid_arguments("the arguments must be a JSON object")
    return args


def dumps(value: Any) -> str:
    """``value`` as a compact JSON document, UTF-8 kept as is.

    NaN and infinities are refused (they are not JSON): a value holding one
    is a bug in the tool and ends as ``internal_error``.
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def object_schema(
    properties: Mapping[str, Any],
    required: Sequence[str] = (),
    *,
    description: Optional[str] = None,
    additional: bool = False,
    root: bool = True,
) -> Dict[str, Any]:
    """A JSON Schema of an object with ``properties``.

    ``additionalProperties`` is false unless ``additional`` is set, so the
    host rejects misspelled arguments before the tool runs. ``root`` adds
    the ``$schema`` dialect, for the top level of a tool's schema.
    """
    schema: Dict[str, Any] = {}
    if root:
        schema["$schema"] = SCHEMA_DIALECT
    schema["type"] = "object"
    if description:
        schema["description"] = description
    schema["properties"] = dict(properties)
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = additional
    return schema


# ── paths ────────────────────────────────────────────────────────────────

_cwd_provider: Callable[[], Optional[str]] = os.getcwd


def set_initial_cwd_provider(provider: Callable[[], Optional[str]]) -> None:
    """Sets where :func:`initial_cwd` comes from. The component glue sets it
    to ``wasi:cli/environment.initial-cwd``; natively it is ``os.getcwd``."""
    global _cwd_provider
    _cwd_provider = provider


def initial_cwd() -> str:
    """The initial working directory the host gives (normally the guest path
    of the first granted directory, e.g. ``/workspace``), or ``/``."""
    cwd = _cwd_provider()
    if not cwd:
        return "/"
    return cwd if cwd.startswith("/") else "/" + cwd


def resolve_path(path: str) -> str:
    """Resolves a path argument the way the host's path checks do: a
    relative path is joined onto :func:`initial_cwd`, then ``.`` and empty
    components are dropped and ``..`` pops one (never above ``/``).

    Tools must use it for every path argument: inside a component, Python's
    own working directory is ``/``, where nothing is granted.
    """
    joined = path if path.startswith("/") else initial_cwd().rstrip("/") + "/" + path
    parts: List[str] = []
    for part in joined.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)

