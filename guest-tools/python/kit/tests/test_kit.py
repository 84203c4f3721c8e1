"""The kit: declarations, dispatch, failures, paths and the test helpers."""

import errno
import json
import os
import sys
import unittest

import toolhost_kit as kit
from toolhost_kit import testing

INPUT = kit.object_schema({"n": {"type": "integer"}}, required=["n"])
OUTPUT = kit.object_schema({"double": {"type": "integer"}}, required=["double"])


def double(args):
    if args["n"] < 0:
        raise kit.ToolError("negative", "n must be positive", {"n": args["n"]})
    if args["n"] == 13:
        raise RuntimeError("unlucky")
    if args["n"] == 99:
        return {"double": float("nan")}
    if args["n"] == 7:
        return {"double": "fourteen"}
    return {"double": args["n"] * 2}


DOUBLE = kit.Tool(
    name="double",
    description="Doubles n.",
    input_schema=INPUT,
    output_schema=OUTPUT,
    execute=double,
    render=lambda args, value: [kit.Text(f"{args['n']} × 2 = {value['double']}")],
    annotations=kit.Annotations(read_only=True),
)
PLAIN = kit.Tool(name="plain", description="No renderer.", input_schema=INPUT, output_schema={}, execute=double)
SET = kit.Toolset([DOUBLE, PLAIN])


class Declarations(unittest.TestCase):
    def test_names(self):
        for bad in ("", "Double", "1x", "a-b", "a" * 65):
            with self.subTest(name=bad), self.assertRaises(ValueError):
                kit.Tool(name=bad, description="", input_schema=INPUT, output_schema={}, execute=double)
        kit.Tool(name="a" * 64, description="", input_schema=INPUT, output_schema={}, execute=double)

    def test_input_schema_is_an_object(self):
        with self.assertRaises(ValueError):
            kit.Tool(name="x", description="", input_schema={"type": "array"}, output_schema={}, execute=double)

    def test_duplicates(self):
        with self.assertRaises(ValueError):
            kit.Toolset([DOUBLE, DOUBLE])

    def test_path_params(self):
        self.assertEqual(kit.PathParam("/path").access, "read")
        with self.assertRaises(ValueError):
            kit.PathParam("path")
        with self.assertRaises(ValueError):
            kit.PathParam("/path", "delete")

    def test_object_schema(self):
        self.assertEqual(
            kit.object_schema({"a": {}}, ["a"], root=False),
            {"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": False},
        )
        self.assertEqual(INPUT["$schema"], kit.SCHEMA_DIALECT)
        testing.check_schemas(DOUBLE)


class Dispatch(unittest.TestCase):
    def code(self, name, arguments):
        with self.assertRaises(kit.ToolError) as e:
            SET.execute_json(name, arguments)
        return e.exception

    def test_execute(self):
        self.assertEqual(SET.execute_json("double", '{"n": 21}'), '{"double":42}')

    def test_failures(self):
        self.assertEqual(self.code("triple", "{}").code, "unknown_tool")
        self.assertEqual(self.code("double", "{").code, "invalid_arguments")
        self.assertEqual(self.code("double", "[1]").code, "invalid_arguments")
        own = self.code("double", '{"n": -1}')
        self.assertEqual((own.code, own.message, own.info), ("negative", "n must be positive", {"n": -1}))
        bug = self.code("double", '{"n": 13}')
        self.assertEqual((bug.code, bug.message), ("internal_error", "RuntimeError: unlucky"))
        self.assertEqual(self.code("double", '{"n": 99}').code, "internal_error")  # NaN is not JSON

    def test_render(self):
        self.assertEqual(SET.render_json("double", '{"n": 2}', '{"double": 4}'), [kit.Text("2 × 2 = 4")])
        self.assertIsNone(SET.render_json("plain", '{"n": 2}', '{"double": 4}'))
        self.assertIsNone(SET.render_json("nope", "{}", "{}"))
        self.assertIsNone(SET.render_json("double", "{", "{}"))

    def test_error_codes_are_snake_case(self):
        with self.assertRaises(ValueError):
            kit.ToolError("Not-Found", "x")


class OsErrors(unittest.TestCase):
    def test_mapping(self):
        cases = [
            (FileNotFoundError(errno.ENOENT, "x"), "not_found"),
            (IsADirectoryError(errno.EISDIR, "x"), "is_directory"),
            (NotADirectoryError(errno.ENOTDIR, "x"), "not_a_directory"),
            (PermissionError(errno.EACCES, "x"), "permission_denied"),
            (OSError(errno.EIO, "I/O error"), "io_error"),
        ]
        for err, code in cases:
            with self.subTest(code=code):
                failure = kit.ToolError.from_os_error(err, "data.csv")
                self.assertEqual(failure.code, code)
                self.assertIn("data.csv", failure.message)


class Paths(unittest.TestCase):
    def tearDown(self):
        kit.set_initial_cwd_provider(os.getcwd)

    def test_resolve(self):
        kit.set_initial_cwd_provider(lambda: "/workspace")
        self.assertEqual(kit.resolve_path("data.csv"), "/workspace/data.csv")
        self.assertEqual(kit.resolve_path("./a//b/../c.csv"), "/workspace/a/c.csv")
        self.assertEqual(kit.resolve_path("."), "/workspace")
        self.assertEqual(kit.resolve_path("/etc/passwd"), "/etc/passwd")
        self.assertEqual(kit.resolve_path("../../x"), "/x")

    def test_no_cwd(self):
        kit.set_initial_cwd_provider(lambda: None)
        self.assertEqual(kit.initial_cwd(), "/")
        self.assertEqual(kit.resolve_path("a"), "/a")


class Context(unittest.TestCase):
    def tearDown(self):
        kit.take_reports()
        kit.cancel_for_test(False)

    def test_reports_are_kept_natively(self):
        c = kit.ctx()
        c.progress(1, 2, "half")
        c.progress(2)
        c.log(kit.LogLevel.WARNING, "w")
        c.log("debug", "d")
        self.assertEqual(
            kit.take_reports(),
            [
                kit.Progress(1, 2, "half"),
                kit.Progress(2, None, None),
                kit.Log(kit.LogLevel.WARNING, "w"),
                kit.Log(kit.LogLevel.DEBUG, "d"),
            ],
        )
        self.assertEqual(kit.take_reports(), [])
        self.assertIs(kit.ctx(), c)

    def test_cancellation_can_be_simulated(self):
        self.assertFalse(kit.ctx().cancelled())
        kit.cancel_for_test()
        self.assertTrue(kit.ctx().cancelled())
        kit.cancel_for_test(False)
        self.assertFalse(kit.ctx().cancelled())

    def test_levels_mirror_the_wit(self):
        self.assertEqual(
            kit.LOG_LEVELS,
            ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"),
        )
        self.assertEqual(kit.LogLevel("error"), kit.LogLevel.ERROR)
        self.assertEqual(str(kit.LogLevel.NOTICE), "notice")

    def test_bad_arguments_are_bugs(self):
        c = kit.ctx()
        for args in [(-1,), (2**64,), (1, -1)]:
            with self.subTest(args=args), self.assertRaises(ValueError):
                c.progress(*args)
        for args in [("1",), (1.5,), (True,), (1, None, 3)]:
            with self.subTest(args=args), self.assertRaises(TypeError):
                c.progress(*args)
        with self.assertRaises(ValueError):
            c.log("warn", "x")
        with self.assertRaises(TypeError):
            c.log("info", None)
        self.assertEqual(kit.take_reports(), [])
        c.progress(2**64 - 1, 2**64 - 1)
        self.assertEqual(kit.take_reports(), [kit.Progress(2**64 - 1, 2**64 - 1)])

    def test_a_tool_reports_while_it_runs(self):
        def count(args):
            done = 0
            for done in range(1, args["n"] + 1):
                if kit.ctx().cancelled():
                    raise kit.ToolError("cancelled", "the call was cancelled")
                kit.ctx().progress(done, args["n"])
            kit.ctx().log("info", f"counted to {done}")
            return {"double": done * 2}

        toolset = kit.Toolset([kit.Tool(name="count", description="", input_schema=INPUT, output_schema=OUTPUT, execute=count)])
        value, _ = testing.call(toolset, "count", {"n": 2})
        self.assertEqual(value, {"double": 4})
        self.assertEqual(
            kit.take_reports(),
            [kit.Progress(1, 2), kit.Progress(2, 2), kit.Log(kit.LogLevel.INFO, "counted to 2")],
        )
        kit.cancel_for_test(True)
        with self.assertRaises(kit.ToolError) as e:
            testing.call(toolset, "count", {"n": 2})
        self.assertEqual(e.exception.code, "cancelled")

    def test_a_backend_receives_checked_calls(self):
        calls = []

        class Backend:
            def progress(self, done, total, message):
                calls.append(("progress", done, total, message))

            def log(self, level, message):
                calls.append(("log", level, message))

            def cancelled(self):
                return True

        kit.set_context_backend(Backend())
        try:
            kit.ctx().progress(3, message="m")
            kit.ctx().log("alert", "a")
            self.assertTrue(kit.ctx().cancelled())
        finally:
            kit.set_context_backend(None)
        self.assertEqual(calls, [("progress", 3, None, "m"), ("log", kit.LogLevel.ALERT, "a")])
        self.assertEqual(kit.take_reports(), [])
        self.assertFalse(kit.ctx().cancelled())


class NewContent(unittest.TestCase):
    def test_audio_and_resources(self):
        self.assertEqual(kit.Audio("UklGRg==", "audio/wav").mime_type, "audio/wav")
        text = kit.Resource.of_text("file:///a.md", "# A", "text/markdown")
        self.assertEqual(text, kit.Resource("file:///a.md", kit.ResourceText("# A"), "text/markdown"))
        blob = kit.Resource.of_blob("file:///a.bin", "AAE=")
        self.assertEqual((blob.contents, blob.mime_type), (kit.ResourceBlob("AAE="), None))
        with self.assertRaises(TypeError):
            kit.Resource("file:///a", "just a string")

    def test_render_returns_them(self):
        tool = kit.Tool(
            name="media",
            description="",
            input_schema=INPUT,
            output_schema=OUTPUT,
            execute=double,
            render=lambda args, value: [kit.Audio("AA==", "audio/wav"), kit.Resource.of_text("x:/y", "t")],
        )
        value, content = testing.call(kit.Toolset([tool]), "media", {"n": 1})
        self.assertEqual(content, [kit.Audio("AA==", "audio/wav"), kit.Resource("x:/y", kit.ResourceText("t"))])
        self.assertEqual(testing.text_of(content), "")


class HostRenders(unittest.TestCase):
    def test_default_and_declared(self):
        self.assertFalse(DOUBLE.host_renders)
        tool = kit.Tool(name="hr", description="", input_schema=INPUT, output_schema=OUTPUT, execute=double, host_renders=True)
        self.assertTrue(tool.host_renders)
        self.assertIsNone(kit.Toolset([tool]).render_json("hr", '{"n": 1}', '{"double": 2}'))

    def test_it_excludes_a_renderer(self):
        with self.assertRaises(ValueError):
            kit.Tool(
                name="hr",
                description="",
                input_schema=INPUT,
                output_schema=OUTPUT,
                execute=double,
                render=lambda args, value: None,
                host_renders=True,
            )


class Testing(unittest.TestCase):
    def test_call(self):
        value, content = testing.call(SET, "double", {"n": 4})
        self.assertEqual(value, {"double": 8})
        self.assertEqual(testing.text_of(content), "4 × 2 = 8")

    def test_schemas_are_checked(self):
        with self.assertRaises(kit.ToolError) as e:
            testing.call(SET, "double", {"n": "4"})
        self.assertEqual(e.exception.code, "invalid_arguments")
        with self.assertRaises(testing.OutputInvalid):
            testing.call(SET, "double", {"n": 7})

    def test_new_imports_are_forbidden(self):
        name = "colorsys"
        self.assertNotIn(name, sys.modules, "pick a module nothing imported yet")
        with testing.no_new_imports(), self.assertRaises(ImportError):
            __import__(name)
        with testing.no_new_imports():
            json.dumps({})  # already imported: fine


if __name__ == "__main__":
    unittest.main()
