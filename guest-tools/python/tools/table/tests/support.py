"""Shared fixtures: a temporary directory standing in for ``/workspace``."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, Tuple

import toolhost_kit as kit
from toolhost_kit import testing

from table_tool import TOOLSET

SALES_CSV = """\
id,product,city,price,in_stock,zip,note
1,Widget,Paris,9.99,true,01234,
2,Gadget,Lyon,19.5,false,75001,"two
lines"
3,Doohickey,Paris,3,TRUE,13001,has | pipe
4,Thingamajig,,120,false,,
5,Whatsit,Marseille,,true,13002,x
"""


class WorkspaceCase(unittest.TestCase):
    """Each test gets an empty directory as the initial working directory,
    the way the host gives a component its first granted directory."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="table-tool-")
        kit.set_initial_cwd_provider(lambda: self.dir)

    def tearDown(self) -> None:
        kit.set_initial_cwd_provider(os.getcwd)
        shutil.rmtree(self.dir)

    def write(self, name: str, content: Any) -> str:
        """Writes ``content`` (str or bytes) to ``name`` in the directory."""
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as f:
            f.write(content)
        return name

    def call(self, name: str, **args: Any) -> Tuple[Dict[str, Any], str]:
        """Runs a tool as the host would: its value and rendered text."""
        value, content = testing.call(TOOLSET, name, args)
        return value, testing.text_of(content)

    def fails(self, name: str, code: str, **args: Any) -> kit.ToolError:
        """Asserts that the call fails with ``code``; returns the failure."""
        with self.assertRaises(kit.ToolError) as caught:
            testing.call(TOOLSET, name, args)
        self.assertEqual(caught.exception.code, code, caught.exception.message)
        return caught.exception
