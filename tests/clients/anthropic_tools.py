#!/usr/bin/env python3
"""Checks a `toolhost tools --format anthropic` listing against the Anthropic
Python SDK's own types for the Messages API's `tools` (`anthropic`, pinned in
requirements.txt): every entry validates as a `ToolUnionParam` member, carries
no key that member does not declare, and the deferred tools and the search
tool follow the tool-search rules (the search tool itself never deferred, at
least one tool not deferred).

Usage: anthropic_tools.py LISTING.json
Prints one JSON line of facts; exits 1 with `anthropic_tools: FAILED ...`.
"""

import json
import sys
import typing

from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param, ToolUnionParam
from pydantic import TypeAdapter


def fail(message: str) -> None:
    print(f"anthropic_tools: FAILED {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        tools = json.load(f)
    if not isinstance(tools, list) or not tools:
        fail("not a non-empty list")
    TypeAdapter(list[ToolUnionParam]).validate_python(tools)
    search_types = typing.get_type_hints(ToolSearchToolBm25_20251119Param)["type"]
    facts = {"tools": 0, "deferred": 0, "search": []}
    for t in tools:
        if t.get("type") in typing.get_args(search_types):
            shape = ToolSearchToolBm25_20251119Param
            if t.get("defer_loading"):
                fail(f"the search tool is deferred: {t}")
            facts["search"].append(t)
        else:
            shape = ToolParam
            TypeAdapter(ToolParam).validate_python(t, strict=True)
            facts["tools"] += 1
            facts["deferred"] += bool(t.get("defer_loading"))
        extra = set(t) - set(typing.get_type_hints(shape))
        if extra:
            fail(f"keys {sorted(extra)} are not in {shape.__name__}: {t.get('name')}")
    if facts["deferred"] and not facts["search"]:
        fail("tools are deferred but no tool search is offered")
    if facts["deferred"] == facts["tools"]:
        fail("every tool is deferred")
    print(json.dumps(facts))


main()
