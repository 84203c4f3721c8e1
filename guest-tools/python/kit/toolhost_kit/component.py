"""The WIT plumbing: a :class:`toolhost_kit.Toolset` as the ``tool`` export of
``toolhost:tool@0.3.0``, and :func:`toolhost_kit.ctx` on its ``context``
import.

This module imports the bindings componentize-py generates (``wit_world``)
while it builds the component, so it only imports inside that build; tool
logic never imports it. The component's entry module does::

    from toolhost_kit.component import export
    from my_tool import TOOLSET

    Tool = export(TOOLSET)

componentize-py instantiates the module's ``Tool`` class for the exported
interface ``tool`` (the class name is the interface name in PascalCase).
"""

from __future__ import annotations

import json
from typing import List, Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import context, environment, types

import toolhost_kit as kit

__all__ = ["export"]

_ACCESS = {
    "read": types.PathAccess.READ,
    "list": types.PathAccess.LIST,
    "create": types.PathAccess.CREATE,
    "overwrite": types.PathAccess.OVERWRITE,
    "patch": types.PathAccess.PATCH,
    "write": types.PathAccess.WRITE,
}

_LOG_LEVEL = {level: types.LogLevel[level.name] for level in kit.LogLevel}


class _WitContext:
    """:func:`toolhost_kit.ctx` inside a component: the ``context`` import."""

    def progress(self, done: int, total: Optional[int], message: Optional[str]) -> None:
        context.progress(done, total, message)

    def log(self, level: kit.LogLevel, message: str) -> None:
        context.log(_LOG_LEVEL[level], message)

    def cancelled(self) -> bool:
        return context.cancelled()


def export(toolset: kit.Toolset) -> type:
    """The class implementing the ``tool`` interface for ``toolset``.

    It also points :func:`toolhost_kit.initial_cwd` at
    ``wasi:cli/environment.initial-cwd``, so relative path arguments resolve
    where the host's path checks resolved them, and :func:`toolhost_kit.ctx`
    at the ``toolhost:tool/context`` import. Neither is called before a call
    runs (this runs at build time).
    """
    kit.set_initial_cwd_provider(environment.initial_cwd)
    kit.set_context_backend(_WitContext())
    # Built once, at build time (pre-initialization): list-tools then costs
    # nothing but the copy into the host.
    descriptors = [_descriptor(t) for t in toolset.tools]

    class Tool(exports.Tool):
        """The ``tool`` interface of ``toolhost:tool@0.3.0``."""

        def list_tools(self) -> List[types.ToolDescriptor]:
            return descriptors

        def execute(self, name: str, arguments: str) -> str:
            try:
                return toolset.execute_json(name, arguments)
            except kit.ToolError as err:
                raise Err(_failure(err)) from None

        def render(self, name: str, arguments: str, value: str) -> Optional[List[types.ContentBlock]]:
            content = toolset.render_json(name, arguments, value)
            if content is None:
                return None
            return [_content_block(c) for c in content]

    return Tool


def _descriptor(tool: kit.Tool) -> types.ToolDescriptor:
    a = tool.annotations
    return types.ToolDescriptor(
        name=tool.name,
        description=tool.description,
        input_schema=json.dumps(tool.input_schema, ensure_ascii=False),
        output_schema=json.dumps(tool.output_schema, ensure_ascii=False),
        annotations=types.Annotations(
            read_only=a.read_only,
            destructive=a.destructive,
            idempotent=a.idempotent,
            open_world=a.open_world,
        ),
        paths=[types.PathParam(pointer=p.pointer, access=_ACCESS[p.access]) for p in tool.paths],
        title=tool.title,
        urls=list(tool.urls),
        host_renders=bool(tool.host_renders),
    )


def _failure(err: kit.ToolError) -> types.ToolFailure:
    info = None if err.info is None else kit.dumps(err.info)
    return types.ToolFailure(code=err.code, message=err.message, info=info)


def _content_block(block: kit.Content) -> types.ContentBlock:
    if isinstance(block, kit.Text):
        return types.ContentBlock_Text(block.text)
    if isinstance(block, kit.Image):
        return types.ContentBlock_Image(types.Image(data=block.data, mime_type=block.mime_type))
    if isinstance(block, kit.ResourceLink):
        return types.ContentBlock_ResourceLink(
            types.ResourceLink(
                uri=block.uri,
                name=block.name,
                mime_type=block.mime_type,
                description=block.description,
            )
        )
    if isinstance(block, kit.Audio):
        return types.ContentBlock_Audio(types.Audio(data=block.data, mime_type=block.mime_type))
    if isinstance(block, kit.Resource):
        return types.ContentBlock_EmbeddedResource(
            types.EmbeddedResource(
                uri=block.uri,
                mime_type=block.mime_type,
                contents=_resource_contents(block.contents),
            )
        )
    raise TypeError(f"not a content block: {block!r}")


def _resource_contents(contents: kit.ResourceContents) -> types.ResourceContents:
    if isinstance(contents, kit.ResourceText):
        return types.ResourceContents_Text(contents.text)
    if isinstance(contents, kit.ResourceBlob):
        return types.ResourceContents_Blob(contents.data)
    raise TypeError(f"not resource contents: {contents!r}")
