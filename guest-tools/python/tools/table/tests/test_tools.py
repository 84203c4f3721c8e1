"""The three tools end to end, as the host runs them: input schema,
execute, output schema, render (see toolhost_kit.testing)."""

import json
import unittest

from support import SALES_CSV, WorkspaceCase

import toolhost_kit as kit
from toolhost_kit import testing

from table_tool import TOOLSET


class Declarations(unittest.TestCase):
    def test_descriptors(self):
        self.assertEqual([t.name for t in TOOLSET.tools], ["table_schema", "table_stats", "table_filter"])
        for tool in TOOLSET.tools:
            with self.subTest(tool=tool.name):
                testing.check_schemas(tool)
                self.assertEqual(tool.input_schema["$schema"], kit.SCHEMA_DIALECT)
                self.assertFalse(tool.input_schema["additionalProperties"])
                self.assertFalse(tool.output_schema["additionalProperties"])
                self.assertEqual(tool.annotations, kit.Annotations(read_only=True, idempotent=True))
                self.assertEqual(list(tool.paths), [kit.PathParam("/path", "read")])
                self.assertTrue(tool.title)
                json.dumps(tool.input_schema)
                json.dumps(tool.output_schema)


class Schema(WorkspaceCase):
    def test_csv(self):
        self.write("sales.csv", SALES_CSV)
        value, text = self.call("table_schema", path="sales.csv")
        self.assertEqual((value["path"], value["format"], value["rows"]), ("sales.csv", "csv", 5))
        types = {c["name"]: (c["type"], c["empty"]) for c in value["columns"]}
        self.assertEqual(
            types,
            {
                "id": ("integer", 0),
                "product": ("string", 0),
                "city": ("string", 1),
                "price": ("number", 1),
                "in_stock": ("boolean", 0),
                "zip": ("string", 1),
                "note": ("string", 2),
            },
        )
        self.assertEqual(value["columns"][3]["examples"], [9.99, 19.5, 3])
        self.assertEqual(value["columns"][5]["examples"], ["01234", "75001", "13001"])
        self.assertIn("sales.csv (CSV): 5 rows, 7 columns", text)
        self.assertIn("| price | number | 1 | 9.99, 19.5, 3 |", text)
        self.assertIn("two lines, has \\| pipe, x", text)

    def test_json_types(self):
        self.write("p.json", json.dumps([{"n": "a", "v": 1, "t": [1]}, {"n": "b", "v": "x", "o": {}}]))
        value, _ = self.call("table_schema", path="p.json")
        types = {c["name"]: c["type"] for c in value["columns"]}
        self.assertEqual(types, {"n": "string", "v": "mixed", "t": "array", "o": "object"})

    def test_absolute_and_nested_paths(self):
        self.write("sub/d.csv", "a\n1\n")
        value, _ = self.call("table_schema", path=self.dir + "/sub/../sub/d.csv")
        self.assertEqual(value["rows"], 1)
        value, _ = self.call("table_schema", path="./sub/d.csv")
        self.assertEqual(value["rows"], 1)

    def test_failures(self):
        self.fails("table_schema", "not_found", path="nope.csv")
        self.fails("table_schema", "invalid_arguments", path="x.csv", extra=1)
        self.fails("table_schema", "invalid_arguments", path="x.csv", format="xlsx")
        self.write("x.xlsx", "")
        self.fails("table_schema", "unsupported_format", path="x.xlsx")


class Stats(WorkspaceCase):
    def setUp(self):
        super().setUp()
        self.write("sales.csv", SALES_CSV)

    def test_numeric_and_text(self):
        value, text = self.call("table_stats", path="sales.csv", columns=["price", "city"], top=2)
        price, city = value["columns"]
        self.assertEqual(price["name"], "price")
        self.assertEqual((price["count"], price["empty"], price["distinct"]), (4, 1, 4))
        self.assertEqual((price["min"], price["max"]), (3, 120))
        self.assertAlmostEqual(price["sum"], 152.49)
        self.assertAlmostEqual(price["mean"], 38.1225)
        self.assertAlmostEqual(price["median"], 14.745)
        self.assertAlmostEqual(price["stddev"], 55.00227, places=4)
        self.assertNotIn("top", price)
        self.assertEqual(city["top"], [{"value": "Paris", "count": 2}, {"value": "Lyon", "count": 1}])
        self.assertEqual(city["distinct"], 3)
        self.assertIn("| price | number | 4 | 1 | 4 | 3 | 120 | 38.1225 | 14.745 | 55.0023 |", text)
        self.assertIn("| city | string | 4 | 1 | 3 | Paris (2), Lyon (1) |", text)

    def test_all_columns_and_booleans(self):
        value, _ = self.call("table_stats", path="sales.csv")
        self.assertEqual(len(value["columns"]), 7)
        in_stock = value["columns"][4]
        self.assertEqual(in_stock["top"], [{"value": True, "count": 3}, {"value": False, "count": 2}])

    def test_small_columns(self):
        self.write("one.csv", "a,b\n5,\n")
        a, b = self.call("table_stats", path="one.csv")[0]["columns"]
        self.assertEqual((a["mean"], a["median"], a["stddev"]), (5.0, 5, None))
        self.assertEqual((b["type"], b["count"], b["top"]), ("empty", 0, []))

    def test_mixed_json_values_stay_apart(self):
        self.write("m.json", json.dumps([{"v": 1}, {"v": True}, {"v": "1"}, {"v": 1}]))
        (v,) = self.call("table_stats", path="m.json")[0]["columns"]
        self.assertEqual(v["type"], "mixed")
        self.assertEqual(v["top"], [{"value": 1, "count": 2}, {"value": True, "count": 1}, {"value": "1", "count": 1}])

    def test_unknown_column(self):
        e = self.fails("table_stats", "unknown_column", path="sales.csv", columns=["prize"])
        self.assertIn("price", e.message)
        self.assertEqual(e.info["column"], "prize")

    def test_top_bounds(self):
        self.fails("table_stats", "invalid_arguments", path="sales.csv", top=0)
        self.fails("table_stats", "invalid_arguments", path="sales.csv", top=51)


class Filter(WorkspaceCase):
    def setUp(self):
        super().setUp()
        self.write("sales.csv", SALES_CSV)

    def test_conditions(self):
        value, text = self.call(
            "table_filter",
            path="sales.csv",
            where=[{"column": "price", "op": "gt", "value": 5}, {"column": "city", "op": "ne", "value": None}],
            columns=["product", "price"],
        )
        self.assertEqual(value["rows"], [{"product": "Widget", "price": 9.99}, {"product": "Gadget", "price": 19.5}])
        self.assertEqual((value["matched"], value["total_rows"], value["truncated"]), (2, 5, False))
        self.assertEqual(value["columns"], ["product", "price"])
        self.assertIn('sales.csv: 2 of 5 rows match price gt 5 and city ne null; rows 1–2:', text)
        self.assertIn("| Widget | 9.99 |", text)

    def test_typed_rows(self):
        value, _ = self.call("table_filter", path="sales.csv", where=[{"column": "id", "op": "eq", "value": 4}])
        self.assertEqual(
            value["rows"],
            [{"id": 4, "product": "Thingamajig", "city": None, "price": 120, "in_stock": False, "zip": None, "note": None}],
        )

    def test_contains_and_text(self):
        value, _ = self.call("table_filter", path="sales.csv", where=[{"column": "note", "op": "contains", "value": "PIPE"}])
        self.assertEqual([r["id"] for r in value["rows"]], [3])
        value, _ = self.call("table_filter", path="sales.csv", where=[{"column": "zip", "op": "eq", "value": "01234"}])
        self.assertEqual([r["id"] for r in value["rows"]], [1])
        value, _ = self.call("table_filter", path="sales.csv", where=[{"column": "in_stock", "op": "eq", "value": True}])
        self.assertEqual([r["id"] for r in value["rows"]], [1, 3, 5])

    def test_paging(self):
        rows = "\n".join(f"{i},{i % 3}" for i in range(1, 101))
        self.write("n.csv", "n,m\n" + rows + "\n")
        where = [{"column": "m", "op": "eq", "value": 0}]
        value, text = self.call("table_filter", path="n.csv", where=where, limit=10)
        self.assertEqual((value["matched"], len(value["rows"]), value["truncated"]), (33, 10, True))
        self.assertEqual(value["rows"][0], {"n": 3, "m": 0})
        self.assertIn("23 more matching rows: call again with offset=10.", text)
        value, text = self.call("table_filter", path="n.csv", where=where, limit=10, offset=30)
        self.assertEqual(([r["n"] for r in value["rows"]], value["truncated"]), ([93, 96, 99], False))
        self.assertIn("rows 31–33:", text)
        value, text = self.call("table_filter", path="n.csv", where=where, offset=40)
        self.assertEqual((value["rows"], value["matched"]), ([], 33))
        self.assertIn("none past offset 40", text)
        value, text = self.call("table_filter", path="n.csv")
        self.assertEqual((len(value["rows"]), value["matched"], value["truncated"]), (50, 100, True))
        self.assertTrue(text.startswith("n.csv: 100 rows; rows 1–50:"), text[:40])
        self.assertTrue(text.endswith("50 more rows: call again with offset=50."), text[-50:])
        _, text = self.call("table_filter", path="n.csv", where=[{"column": "n", "op": "eq", "value": 7}])
        self.assertTrue(text.startswith("n.csv: 1 of 100 rows match n eq 7; row 1:"), text[:50])

    def test_limits(self):
        self.fails("table_filter", "invalid_arguments", path="sales.csv", limit=1001)
        self.fails("table_filter", "invalid_arguments", path="sales.csv", limit=0)
        self.fails("table_filter", "invalid_arguments", path="sales.csv", offset=-1)
        too_many = [{"column": "id", "op": "gt", "value": 0}] * 21
        self.fails("table_filter", "invalid_arguments", path="sales.csv", where=too_many)

    def test_bad_conditions(self):
        self.fails("table_filter", "invalid_arguments", path="sales.csv", where=[{"column": "id", "op": "like", "value": 1}])
        self.fails("table_filter", "invalid_arguments", path="sales.csv", where=[{"column": "id", "value": 1}])
        self.fails("table_filter", "unknown_column", path="sales.csv", where=[{"column": "ID", "op": "eq", "value": 1}])
        self.fails("table_filter", "unknown_column", path="sales.csv", columns=["id", "nope"])
        e = self.fails("table_filter", "invalid_arguments", path="sales.csv", where=[{"column": "price", "op": "gt", "value": "cheap"}])
        self.assertIn("holds numbers", e.message)
        e = self.fails("table_filter", "invalid_arguments", path="sales.csv", where=[{"column": "price", "op": "lt", "value": None}])
        self.assertIn("eq and ne", e.message)

    def test_without_schema_checks(self):
        # The tool's own checks hold when the host's schema checks are bypassed.
        for args in ({}, {"path": 3}, {"path": "sales.csv", "limit": "9"}, {"path": "sales.csv", "where": {}},
                     {"path": "sales.csv", "where": [{"column": "id", "op": "eq", "value": [1]}]}):
            with self.subTest(args=args), self.assertRaises(kit.ToolError) as e:
                TOOLSET.execute_json("table_filter", json.dumps(args))
            self.assertEqual(e.exception.code, "invalid_arguments")


if __name__ == "__main__":
    unittest.main()
