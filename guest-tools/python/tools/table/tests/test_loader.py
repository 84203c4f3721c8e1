"""Reading files: formats, CSV dialects, JSON shapes, and every failure."""

import unittest
from unittest import mock

from support import WorkspaceCase

from table_tool import loader


class Formats(WorkspaceCase):
    def rows(self, name, fmt=None):
        table = loader.load(name, fmt)
        return table.columns, list(table.rows())

    def test_extensions(self):
        self.assertEqual(loader.detect_format("a/b.CSV", None), "csv")
        self.assertEqual(loader.detect_format("b.tab", None), "tsv")
        self.assertEqual(loader.detect_format("b.ndjson", None), "jsonl")
        self.assertEqual(loader.detect_format("b.txt", "csv"), "csv")

    def test_unknown_extension(self):
        self.write("data.txt", "a,b\n1,2\n")
        with self.assertRaises(loader.kit.ToolError) as e:
            loader.load("data.txt")
        self.assertEqual(e.exception.code, "unsupported_format")
        self.assertEqual(self.rows("data.txt", "csv"), (["a", "b"], [["1", "2"]]))

    def test_csv_dialect(self):
        self.write("semi.csv", "\ufeffa;b;c\r\n1;2,5;x\r\n\r\n3;4\r\n")  # BOM, CRLF, blank, short
        self.assertEqual(self.rows("semi.csv"), (["a", "b", "c"], [["1", "2,5", "x"], ["3", "4", ""]]))
        self.write("t.tsv", "a\tb\n1\t2\n")
        self.assertEqual(self.rows("t.tsv"), (["a", "b"], [["1", "2"]]))

    def test_header_names(self):
        self.write("h.csv", "a,,a, a \n1,2,3,4\n")
        self.assertEqual(self.rows("h.csv")[0], ["a", "column_2", "a_2", "a_3"])

    def test_trailing_empty_fields_are_dropped(self):
        self.write("t.csv", "a,b\n1,2,\n3,4, ,\n")
        self.assertEqual(self.rows("t.csv")[1], [["1", "2"], ["3", "4"]])

    def test_long_row(self):
        self.write("long.csv", "a,b\n1,2\n1,2,3\n")
        with self.assertRaises(loader.kit.ToolError) as e:
            self.rows("long.csv")
        self.assertEqual(e.exception.code, "parse_error")
        self.assertEqual(e.exception.info, {"line": 3})

    def test_quoted_newlines(self):
        self.write("q.csv", 'a,b\n"x\ny",1\n')
        self.assertEqual(self.rows("q.csv")[1], [["x\ny", "1"]])

    def test_empty_files(self):
        self.write("e.csv", "")
        self.assertEqual(self.rows("e.csv"), ([], []))
        self.write("e.json", "[]")
        self.assertEqual(self.rows("e.json"), ([], []))

    def test_json(self):
        self.write("a.json", '[{"a": 1, "b": "x"}, {"c": null, "a": 2.5}]')
        self.assertEqual(self.rows("a.json"), (["a", "b", "c"], [[1, "x", None], [2.5, None, None]]))

    def test_jsonl(self):
        self.write("a.jsonl", '{"a": 1}\n\n{"b": "line\u2028separator"}\r\n')
        self.assertEqual(self.rows("a.jsonl"), (["a", "b"], [[1, None], [None, "line\u2028separator"]]))


class Failures(WorkspaceCase):
    def code(self, name, fmt=None):
        with self.assertRaises(loader.kit.ToolError) as e:
            table = loader.load(name, fmt)
            list(table.rows())
        return e.exception.code

    def test_io(self):
        self.assertEqual(self.code("missing.csv"), "not_found")
        self.write("dir.csv/x", "")
        self.assertEqual(self.code("dir.csv"), "is_directory")

    def test_not_utf8(self):
        self.write("latin.csv", "name\nS\xe3o Paulo\n".encode("latin-1"))
        self.assertEqual(self.code("latin.csv"), "not_utf8")

    def test_too_large(self):
        self.write("big.csv", "a\n" + "1\n" * 100)
        with mock.patch.object(loader, "MAX_FILE_BYTES", 100):
            self.assertEqual(self.code("big.csv"), "file_too_large")

    def test_json_shapes(self):
        self.write("obj.json", '{"rows": []}')
        self.assertEqual(self.code("obj.json"), "unsupported_format")
        self.write("nums.json", "[1, 2]")
        self.assertEqual(self.code("nums.json"), "unsupported_format")
        self.write("line.jsonl", '{"a": 1}\n[1]\n')
        self.assertEqual(self.code("line.jsonl"), "unsupported_format")

    def test_json_syntax(self):
        self.write("bad.json", '[{"a": 1},\n {"a": }]')
        with self.assertRaises(loader.kit.ToolError) as e:
            loader.load("bad.json")
        self.assertEqual(e.exception.code, "parse_error")
        self.assertEqual(e.exception.info["line"], 2)
        self.write("bad.jsonl", '{"a": 1}\n{"a": \n')
        self.assertEqual(self.code("bad.jsonl"), "parse_error")

    def test_non_finite_numbers(self):
        for text in ('[{"a": NaN}]', '[{"a": Infinity}]', '[{"a": 1e999}]'):
            with self.subTest(text=text):
                self.write("n.json", text)
                self.assertEqual(self.code("n.json"), "parse_error")


if __name__ == "__main__":
    unittest.main()
