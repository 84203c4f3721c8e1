"""The computations do not depend on how rows are chunked: the fast paths
(a regex over a numeric column, text columns counting only empty cells,
caches by text) give what the cell-by-cell rules give."""

import json
import unittest
from unittest import mock

from support import SALES_CSV, WorkspaceCase

from table_tool import analysis, cells, loader

# Column n changes kind late: integers, then a float, then an empty cell,
# then text; column b is boolean in two spellings; column s is text early.
LATE_CSV = "n,b,s\n" + "".join(f"{i},{'TRUE' if i % 2 else 'true'},s{i}\n" for i in range(1, 8))
LATE_CSV += "2.5,false,\n,False, \nabc,true,z\n"


class Chunking(WorkspaceCase):
    WHERE = {
        "late.csv": [analysis.Condition("n", "ge", 3), analysis.Condition("b", "eq", True)],
        "late.json": [analysis.Condition("b", "ne", "true"), analysis.Condition("s", "contains", "S")],
        "sales.csv": [analysis.Condition("price", "gt", 5), analysis.Condition("city", "ne", None)],
    }

    def results(self, name):
        table = loader.load(name)
        return (
            analysis.schema(table),
            analysis.stats(table, None, 5),
            analysis.filter_rows(table, self.WHERE[name], None, 1, 3),
            analysis.filter_rows(table, [], ["s" if "late" in name else "city"], 2, 4),
        )

    def test_chunk_sizes_agree(self):
        self.write("late.csv", LATE_CSV)
        self.write("sales.csv", SALES_CSV)
        records = [dict(zip(("n", "b", "s"), row)) for row in loader.load("late.csv").rows()]
        self.write("late.json", json.dumps(records))
        for name in ("late.csv", "sales.csv", "late.json"):
            expected = self.results(name)
            for size in (1, 2, 3, 5):
                with self.subTest(file=name, chunk=size), mock.patch.object(analysis, "CHUNK", size):
                    self.assertEqual(self.results(name), expected)

    def test_late_kinds(self):
        self.write("late.csv", LATE_CSV)
        with mock.patch.object(analysis, "CHUNK", 2):
            value = analysis.schema(loader.load("late.csv"))
        n, b, s = value["columns"]
        self.assertEqual((n["type"], n["empty"], n["examples"]), ("string", 1, ["1", "2", "3"]))
        self.assertEqual((b["type"], b["empty"], b["examples"]), ("boolean", 0, [True, False]))
        self.assertEqual((s["type"], s["empty"]), ("string", 2))

    def test_integers_then_floats(self):
        self.write("f.csv", "x\n1\n2\n3\n4\n5\n6\n7.5\n8\n")
        with mock.patch.object(analysis, "CHUNK", 2):
            table = loader.load("f.csv")
            (x,) = analysis.stats(table, None, 5)["columns"]
        self.assertEqual((x["type"], x["min"], x["max"], x["sum"]), ("number", 1.0, 8.0, 36.5))

    def test_fast_path_rules(self):
        self.assertTrue(cells.all_of_kind(["1", " 2", "3\t"], cells.INTEGER))
        self.assertFalse(cells.all_of_kind(["1", ""], cells.INTEGER))  # an empty cell
        self.assertFalse(cells.all_of_kind(["1\n2"], cells.INTEGER))  # a newline in a cell
        self.assertFalse(cells.all_of_kind(["007"], cells.INTEGER))
        self.assertTrue(cells.all_of_kind(["1", "2.5", ".5"], cells.NUMBER))
        self.assertFalse(cells.all_of_kind(["1e5"], cells.NUMBER))  # exponents: cell by cell
        self.assertFalse(cells.all_of_kind(["1" * 300 + ".5"], cells.NUMBER))


if __name__ == "__main__":
    unittest.main()
