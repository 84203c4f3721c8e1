"""No module is first imported while a call runs.

Inside a component, Python modules load at build time only (componentize-py
snapshots the interpreter after importing the entry module), so a lazy
import during a call fails there while it works natively: the standard
library has some (``Counter.most_common`` imports ``heapq``). This test
imports the tool in a fresh interpreter without site packages, forbids new
imports, and runs every tool over every format and the main failures. The
native interpreter may be another Python version than the component's, so a
call through the host (README.md, "Run it") stays the final word.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL_DIR = os.path.dirname(HERE)
KIT_DIR = os.path.join(os.path.dirname(os.path.dirname(TOOL_DIR)), "kit")

SCRIPT = r"""
import json, sys
import toolhost_kit as kit
from toolhost_kit import testing  # imported now: it is the test harness
from table_tool import TOOLSET

kit.set_initial_cwd_provider(lambda: sys.argv[1])
calls = json.loads(sys.argv[2])
problems = []
with testing.no_new_imports():
    for name, args in calls:
        arguments = json.dumps(args)
        try:
            value = TOOLSET.execute_json(name, arguments)
            TOOLSET.render_json(name, arguments, value)
        except kit.ToolError as err:
            if err.code == "internal_error":
                problems.append(f"{name} {arguments}: {err.message}")
        except ImportError as err:  # from render_json
            problems.append(f"{name} {arguments}: {err}")
print(json.dumps(problems))
"""

FILES = {
    "a.csv": "id,name,price,ok\n1,x,2.5,true\n2,y,,false\n3,x,4,true\n",
    "b.tsv": "id\tname\n1\tx\n",
    "c.json": json.dumps([{"id": 1, "tags": ["a"], "v": "s"}, {"id": 2.5, "v": 3}]),
    "d.jsonl": '{"id": 1}\n{"id": 2, "name": "z"}\n',
    "long.csv": "a\n1,2\n",
    "bad.json": "[{",
    "bad.jsonl": "{}\n[1]\n",
    "latin.csv": None,  # written as bytes below
}


class NoImportsDuringCalls(unittest.TestCase):
    def test_every_tool_and_format(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in FILES.items():
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(b"caf\xe9\n" if text is None else text.encode())
            where = [
                {"column": "id", "op": "ge", "value": 1},
                {"column": "name", "op": "contains", "value": "X"},
                {"column": "price", "op": "ne", "value": None},
            ]
            calls = []
            for path in ("a.csv", "b.tsv", "c.json", "d.jsonl"):
                calls += [
                    ["table_schema", {"path": path}],
                    ["table_stats", {"path": path, "top": 3}],
                    ["table_filter", {"path": path, "where": where[:1], "limit": 1}],
                ]
            calls += [
                ["table_filter", {"path": "a.csv", "where": where}],
                ["table_filter", {"path": "a.csv", "where": [{"column": "price", "op": "gt", "value": "x"}]}],
                ["table_stats", {"path": "a.csv", "columns": ["nope"]}],
                ["table_schema", {"path": "missing.csv"}],
                ["table_schema", {"path": "."}],
                ["table_schema", {"path": "notes.txt"}],
                ["table_schema", {"path": "long.csv"}],
                ["table_schema", {"path": "bad.json"}],
                ["table_schema", {"path": "bad.jsonl"}],
                ["table_schema", {"path": "latin.csv"}],
                ["table_nope", {}],
            ]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([KIT_DIR, TOOL_DIR]), PYTHONDONTWRITEBYTECODE="1")
            out = subprocess.run(
                [sys.executable, "-S", "-c", SCRIPT, tmp, json.dumps(calls)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), [])


if __name__ == "__main__":
    unittest.main()
