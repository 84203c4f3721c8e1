"""Kinds, column types, conversion and comparison of cells."""

import unittest

from table_tool import cells
from table_tool.cells import BOOLEAN, EMPTY, INTEGER, MIXED, NUMBER, STRING


class TextKind(unittest.TestCase):
    def test_kinds(self):
        cases = {
            "": EMPTY,
            "   ": EMPTY,
            "0": INTEGER,
            "-12": INTEGER,
            "+7": INTEGER,
            " 42 ": INTEGER,
            "007": STRING,  # identifiers keep their leading zeros
            "3.5": NUMBER,
            "-.5": NUMBER,
            "1e-3": NUMBER,
            "0.25": NUMBER,
            "12.": NUMBER,
            "1e999": STRING,  # not finite
            "nan": STRING,
            "inf": STRING,
            "1,234": STRING,
            "1_000": STRING,
            "true": BOOLEAN,
            "FALSE": BOOLEAN,
            "yes": STRING,
            "Paris": STRING,
        }
        for text, kind in cases.items():
            with self.subTest(text=text):
                self.assertEqual(cells.text_kind(text), kind)

    def test_value_kinds(self):
        self.assertEqual(cells.value_kind(None), EMPTY)
        self.assertEqual(cells.value_kind(True), BOOLEAN)
        self.assertEqual(cells.value_kind(3), INTEGER)
        self.assertEqual(cells.value_kind(3.0), NUMBER)
        self.assertEqual(cells.value_kind("3"), STRING)
        self.assertEqual(cells.value_kind([1]), cells.ARRAY)
        self.assertEqual(cells.value_kind({"a": 1}), cells.OBJECT)


class ColumnType(unittest.TestCase):
    def test_merge(self):
        self.assertEqual(cells.column_type([], textual=True), EMPTY)
        self.assertEqual(cells.column_type([EMPTY], textual=True), EMPTY)
        self.assertEqual(cells.column_type([INTEGER, EMPTY], textual=True), INTEGER)
        self.assertEqual(cells.column_type([INTEGER, NUMBER], textual=True), NUMBER)
        self.assertEqual(cells.column_type([BOOLEAN], textual=True), BOOLEAN)
        self.assertEqual(cells.column_type([INTEGER, STRING], textual=True), STRING)
        self.assertEqual(cells.column_type([BOOLEAN, INTEGER], textual=True), STRING)
        self.assertEqual(cells.column_type([INTEGER, STRING], textual=False), MIXED)

    def test_convert(self):
        self.assertEqual(cells.convert_text(" 12 ", INTEGER), 12)
        self.assertIs(type(cells.convert_text("12", NUMBER)), int)
        self.assertEqual(cells.convert_text("1.5", NUMBER), 1.5)
        self.assertIs(cells.convert_text("True", BOOLEAN), True)
        self.assertIsNone(cells.convert_text("  ", STRING))
        self.assertEqual(cells.convert_text(" padded ", STRING), " padded ")  # text as it is


class Matching(unittest.TestCase):
    def test_numbers(self):
        self.assertTrue(cells.matches(10, "gt", 9.5))
        self.assertTrue(cells.matches(10, "eq", 10.0))
        self.assertTrue(cells.matches(10, "eq", "10"))  # numeric text compares as a number
        self.assertTrue(cells.matches("007", "eq", 7))  # and so does a text cell
        self.assertFalse(cells.matches("N/A", "gt", 1))  # text that is no number never orders
        self.assertFalse(cells.matches("N/A", "lt", 1))
        self.assertTrue(cells.matches("N/A", "ne", 1))

    def test_text(self):
        self.assertTrue(cells.matches("2024-05-01", "ge", "2024-01-31"))
        self.assertFalse(cells.matches("paris", "eq", "Paris"))  # eq is case-sensitive
        self.assertTrue(cells.matches("Saint-Denis", "contains", "DENIS"))  # contains is not
        self.assertTrue(cells.matches(12345, "contains", 234))

    def test_booleans(self):
        self.assertTrue(cells.matches(True, "eq", True))
        self.assertTrue(cells.matches(True, "eq", "true"))
        self.assertTrue(cells.matches("TRUE", "eq", True))
        self.assertFalse(cells.matches(True, "eq", 1))  # a boolean is not a number

    def test_empty(self):
        self.assertTrue(cells.matches(None, "eq", None))
        self.assertFalse(cells.matches(None, "ne", None))
        self.assertFalse(cells.matches("x", "eq", None))
        self.assertTrue(cells.matches("x", "ne", None))
        for op in ("lt", "le", "gt", "ge", "contains"):
            self.assertFalse(cells.matches(None, op, 1), op)
        self.assertTrue(cells.matches(None, "ne", 1))
        self.assertFalse(cells.matches(None, "eq", 1))

    def test_nested(self):
        self.assertTrue(cells.matches(["a", "b"], "contains", '"b"'))
        self.assertTrue(cells.matches({"k": 1}, "eq", '{"k":1}'))


if __name__ == "__main__":
    unittest.main()
