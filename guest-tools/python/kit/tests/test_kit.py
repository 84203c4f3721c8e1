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
