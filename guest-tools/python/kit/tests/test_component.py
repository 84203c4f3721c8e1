"""The WIT plumbing (toolhost_kit.component) over stand-in bindings.

componentize-py generates the bindings (``wit_world``, ``componentize_py_types``)
only while it builds a component, so these tests put stand-ins in
``sys.modules``: the records are dataclasses with the fields, and the enums
the cases, componentize-py 0.25.1 generates for ``toolhost:tool@0.3.0``
(records and variant cases take keyword or positional fields, so a misspelled
or missing field fails here as it would in a build). The context functions
record their calls.
"""

import enum
import json
import os
import sys
import types as pytypes
import unittest
from dataclasses import dataclass
from typing import Any, List, Optional

import toolhost_kit as kit

INPUT = kit.object_schema({"n": {"type": "integer"}}, required=["n"])


def _bindings(calls: List[Any]) -> dict:
    """Stand-ins for the modules componentize-py generates, by name."""
    cpt = pytypes.ModuleType("componentize_py_types")

    @dataclass(frozen=True)
    class Err(Exception):
        value: Any

    cpt.Err = Err

    t = pytypes.ModuleType("wit_world.imports.types")
    t.PathAccess = enum.Enum("PathAccess", "READ LIST CREATE OVERWRITE PATCH WRITE")
    t.LogLevel = enum.Enum("LogLevel", "DEBUG INFO NOTICE WARNING ERROR CRITICAL ALERT EMERGENCY")

    def record(cls_name, **fields):
        cls = dataclass(type(cls_name, (), {"__annotations__": fields}))
        setattr(t, cls_name, cls)
        return cls

    record("PathParam", pointer=str, access=Any)
    record("Annotations", read_only=bool, destructive=bool, idempotent=bool, open_world=bool)
    record(
        "ToolDescriptor",
        name=str,
        description=str,
        input_schema=str,
        output_schema=str,
        annotations=Any,
        paths=list,
        title=Optional[str],
        urls=list,
        host_renders=bool,
    )
    record("Image", data=str, mime_type=str)
    record("Audio", data=str, mime_type=str)
    record("ResourceContents_Text", value=str)
    record("ResourceContents_Blob", value=str)
    record("EmbeddedResource", uri=str, mime_type=Optional[str], contents=Any)
    record("ResourceLink", uri=str, name=str, mime_type=Optional[str], description=Optional[str])
    for case in ("Text", "Image", "ResourceLink", "Audio", "EmbeddedResource"):
        record(f"ContentBlock_{case}", value=Any)
    record("ToolFailure", code=str, message=str, info=Optional[str])

    context = pytypes.ModuleType("wit_world.imports.context")
    context.progress = lambda done, total, message: calls.append(("progress", done, total, message))
    context.log = lambda level, message: calls.append(("log", level, message))
    context.cancelled = lambda: True

    environment = pytypes.ModuleType("wit_world.imports.environment")
    environment.initial_cwd = lambda: "/workspace"

    imports = pytypes.ModuleType("wit_world.imports")
    imports.types, imports.context, imports.environment = t, context, environment

    exports = pytypes.ModuleType("wit_world.exports")
    exports.Tool = type("Tool", (), {})

    world = pytypes.ModuleType("wit_world")
    world.imports, world.exports = imports, exports
    return {
        "componentize_py_types": cpt,
        "wit_world": world,
        "wit_world.imports": imports,
        "wit_world.imports.types": t,
        "wit_world.imports.context": context,
        "wit_world.imports.environment": environment,
        "wit_world.exports": exports,
    }


def _execute(args):
    if args["n"] < 0:
        raise kit.ToolError("negative", "n must be positive", {"n": args["n"]})
    kit.ctx().progress(1, 2, "half")
    kit.ctx().log(kit.LogLevel.NOTICE, "noted")
    return {"cancelled": kit.ctx().cancelled()}


def _render(args, value):
    return [
        kit.Text("t"),
        kit.Image("aW1n", "image/png"),
        kit.ResourceLink("file:///a", "a"),
        kit.Audio("UklGRg==", "audio/wav"),
        kit.Resource.of_text("file:///a.md", "# A", "text/markdown"),
        kit.Resource.of_blob("file:///a.bin", "AAE="),
    ]


MEDIA = kit.Tool(
    name="media",
    title="Media",
    description="Renders every kind of block.",
    input_schema=INPUT,
    output_schema={},
    execute=_execute,
    render=_render,
    annotations=kit.Annotations(read_only=True),
    paths=[kit.PathParam("/p", "write")],
    urls=["/u"],
)
PLAIN = kit.Tool(name="plain", description="", input_schema=INPUT, output_schema={}, execute=_execute, host_renders=True)


class Component(unittest.TestCase):
    def setUp(self):
        self.calls = []
        self.fakes = _bindings(self.calls)
        self.saved = {name: sys.modules.get(name) for name in [*self.fakes, "toolhost_kit.component"]}
        sys.modules.update(self.fakes)
        sys.modules.pop("toolhost_kit.component", None)
        from toolhost_kit import component

        self.component = component
        self.t = self.fakes["wit_world.imports.types"]
        self.tool = component.export(kit.Toolset([MEDIA, PLAIN]))()

    def tearDown(self):
        for name, module in self.saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        if "toolhost_kit.component" not in sys.modules and hasattr(kit, "component"):
            delattr(kit, "component")
        kit.set_context_backend(None)
        kit.set_initial_cwd_provider(os.getcwd)
        kit.take_reports()

    def test_descriptors(self):
        t = self.t
        media, plain = self.tool.list_tools()
        self.assertEqual(
            media,
            t.ToolDescriptor(
                name="media",
                description="Renders every kind of block.",
                input_schema=media.input_schema,  # checked below
                output_schema="{}",
                annotations=t.Annotations(read_only=True, destructive=False, idempotent=False, open_world=False),
                paths=[t.PathParam(pointer="/p", access=t.PathAccess.WRITE)],
                title="Media",
                urls=["/u"],
                host_renders=False,
            ),
        )
        self.assertEqual(json.loads(media.input_schema), INPUT)
        self.assertTrue(plain.host_renders)
        self.assertIsNone(plain.title)

    def test_every_content_block(self):
        t = self.t
        blocks = self.tool.render("media", '{"n": 1}', "{}")
        self.assertEqual(
            blocks,
            [
                t.ContentBlock_Text("t"),
                t.ContentBlock_Image(t.Image(data="aW1n", mime_type="image/png")),
                t.ContentBlock_ResourceLink(t.ResourceLink(uri="file:///a", name="a", mime_type=None, description=None)),
                t.ContentBlock_Audio(t.Audio(data="UklGRg==", mime_type="audio/wav")),
                t.ContentBlock_EmbeddedResource(
                    t.EmbeddedResource(
                        uri="file:///a.md", mime_type="text/markdown", contents=t.ResourceContents_Text("# A")
                    )
                ),
                t.ContentBlock_EmbeddedResource(
                    t.EmbeddedResource(uri="file:///a.bin", mime_type=None, contents=t.ResourceContents_Blob("AAE="))
                ),
            ],
        )
        self.assertIsNone(self.tool.render("plain", '{"n": 1}', "{}"))

    def test_context_goes_to_the_import(self):
        self.assertEqual(self.tool.execute("media", '{"n": 1}'), '{"cancelled":true}')
        self.assertEqual(
            self.calls,
            [("progress", 1, 2, "half"), ("log", self.t.LogLevel.NOTICE, "noted")],
        )
        self.assertEqual(kit.take_reports(), [])
        self.assertEqual(kit.initial_cwd(), "/workspace")

    def test_every_level_maps(self):
        for level in kit.LogLevel:
            kit.ctx().log(level, "m")
        self.assertEqual([c[1].name for c in self.calls], [level.name for level in kit.LogLevel])

    def test_failures(self):
        Err = self.fakes["componentize_py_types"].Err
        with self.assertRaises(Err) as e:
            self.tool.execute("media", '{"n": -1}')
        self.assertEqual(e.exception.value, self.t.ToolFailure(code="negative", message="n must be positive", info='{"n":-1}'))


if __name__ == "__main__":
    unittest.main()
