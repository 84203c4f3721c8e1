#!/usr/bin/env python3
"""Drives `toolhost serve` (stdio) with the agent frameworks people build on, each in its default
configuration, through the API its own README shows (pinned in requirements-frameworks.txt; they
pin the MCP Python SDK's 1.x line, one more client generation):

    pydantic    pydantic-ai: `load_mcp_toolsets` on an `mcpServers` file (the shape Claude
                Desktop, Cursor and the toolhost README use) and an Agent on
                `TestModel(call_tools="all")`, which calls every tool with arguments generated
                from its schema; the run must end.
    openai      openai-agents: `MCPServerStdio` with its default timeouts (5 s per request), and
                every tool converted with `convert_schemas_to_strict=True`.
    langchain   langchain-mcp-adapters: `MultiServerMCPClient`, the tools load, a read answers,
                a path outside the workspace reads as an error.
    pydantic_code, openai_code, langchain_code
                the same frameworks on a server in code mode (`--mode code`): `run_code` is
                listed, and a script sent through it answers.

Usage:
    frameworks.py FRAMEWORK --cmd '["toolhost", "serve", ...]' --cwd DIR [KEY=VALUE ...]

Prints one JSON line of facts and exits 0; exits 1 with `frameworks: FAILED ...` on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any

# Seconds a whole scenario may take before it is a failure.
DEADLINE = 120.0
NOTES = "/workspace/notes.txt"
FACTS: dict[str, Any] = {}


class Failure(Exception):
    """An expectation that did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def server_env() -> dict[str, str]:
    """What the server inherits: the frameworks pass only what they are given (plus a default
    set), so HOME (the fresh compile cache lives under it) goes explicitly."""
    return {k: os.environ[k] for k in ("HOME", "PATH", "TOOLHOST_LOG", "RUST_BACKTRACE") if k in os.environ}


async def run_pydantic(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    from pydantic_ai import Agent, capture_run_messages
    from pydantic_ai.exceptions import UnexpectedModelBehavior
    from pydantic_ai.mcp import load_mcp_toolsets
    from pydantic_ai.models.test import TestModel

    config = {"mcpServers": {"toolhost": {"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env()}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    toolsets = load_mcp_toolsets(f.name)
    agent = Agent(TestModel(call_tools="all"), toolsets=toolsets)
    started = time.monotonic()
    with capture_run_messages() as messages:
        async with agent:
            FACTS["connect_s"] = round(time.monotonic() - started, 3)
            try:
                result = await agent.run("Use every tool once.")
                FACTS["ended"] = "result"
                FACTS["output"] = str(result.output)[:200]
            except UnexpectedModelBehavior as e:
                # The default error handling: a tool error asks the model to retry; a model that
                # cannot fix its arguments spends the retries and the run ends here.
                expect("exceeded max retries" in str(e), f"the run ended otherwise: {e}")
                FACTS["ended"] = "retries spent"
    calls: set[str] = set()
    outcomes: dict[str, str] = {}
    for message in messages:
        for part in message.parts:
            kind = getattr(part, "part_kind", "")
            if kind == "tool-call":
                calls.add(part.tool_name)
            elif kind == "tool-return":
                outcomes[part.tool_name] = "return: " + str(part.content)[:200]
            elif kind == "retry-prompt" and part.tool_name:
                outcomes[part.tool_name] = "retry: " + str(part.content)[:300]
    FACTS["called"] = sorted(calls)
    FACTS["outcomes"] = outcomes
    FACTS["run_s"] = round(time.monotonic() - started, 3)


async def run_openai(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    from agents import Agent, RunContextWrapper
    from agents.mcp import MCPServerStdio

    started = time.monotonic()
    server = MCPServerStdio(params={"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env()})
    async with server:
        FACTS["connect_s"] = round(time.monotonic() - started, 3)
        agent = Agent(name="toolhost", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": True})
        tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
        FACTS["list_s"] = round(time.monotonic() - started, 3)
        FACTS["tools"] = sorted(t.name for t in tools)
        FACTS["strict"] = {t.name: bool(getattr(t, "strict_json_schema", False)) for t in tools}
        read = await server.call_tool("read", {"path": NOTES})
        FACTS["read_error"] = bool(read.isError)
        FACTS["read_text"] = "".join(getattr(b, "text", "") for b in read.content)[:200]
        expected = [n for n in args.get("expect", "").split(",") if n]
        if expected:
            # A slow component's tools come with tools/list_changed; openai-agents lists again
            # on every run (its tool list cache is off by default).
            deadline = time.monotonic() + 90
            while not set(expected) <= set(FACTS["tools"]) and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
                FACTS["tools"] = sorted(t.name for t in tools)
                FACTS["strict"] = {t.name: bool(getattr(t, "strict_json_schema", False)) for t in tools}
            FACTS["complete_s"] = round(time.monotonic() - started, 3)


async def run_langchain(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    started = time.monotonic()
    client = MultiServerMCPClient(
        {"toolhost": {"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env(), "transport": "stdio"}}
    )
    tools = await client.get_tools()
    FACTS["list_s"] = round(time.monotonic() - started, 3)
    by_name = {t.name: t for t in tools}
    FACTS["tools"] = sorted(by_name)
    expect("read" in by_name, f"no read tool: {sorted(by_name)}")
    read = await by_name["read"].ainvoke({"path": NOTES})
    FACTS["read"] = str(read)[:600]
    try:
        denied = await by_name["read"].ainvoke({"path": "/etc/passwd"})
        FACTS["denied"] = {"raised": False, "text": str(denied)[:300]}
    except Exception as e:  # noqa: BLE001 - the adapter reports tool errors by raising
        FACTS["denied"] = {"raised": True, "type": type(e).__name__, "text": str(e)[:300]}


# Code mode: the script both frameworks send through run_code, in the server's
# language (`language=python`: `--language python`).
SCRIPTS = {
    "javascript": """const r = await tools.read({path: "notes.txt"});
return {lines: r.totalLines, needle: r.lines.find(l => l.startsWith("needle"))};""",
    "python": """r = await tools.read(path="notes.txt")
{"lines": r["totalLines"], "needle": [l for l in r["lines"] if l.startswith("needle")][0]}""",
}


async def run_pydantic_code(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    """pydantic-ai on a server in code mode: the toolset lists run_code, and a model that writes a
    script (a FunctionModel: the call a real model would make) gets the script's value back."""
    from pydantic_ai import Agent, capture_run_messages
    from pydantic_ai.mcp import load_mcp_toolsets
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    config = {"mcpServers": {"toolhost": {"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env()}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)

    script = SCRIPTS[args.get("language", "javascript")]

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        FACTS["tools"] = sorted(t.name for t in info.function_tools)
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("toolhost_run_code", {"code": script})])

    agent = Agent(FunctionModel(model), toolsets=load_mcp_toolsets(f.name))
    with capture_run_messages() as messages:
        async with agent:
            result = await agent.run("Count the lines of notes.txt and find the needle.")
    FACTS["output"] = str(result.output)
    for message in messages:
        for part in message.parts:
            if getattr(part, "part_kind", "") == "tool-return":
                content = part.content
                FACTS["returned"] = content if isinstance(content, dict) else {"raw": str(content)[:500]}
    expect("returned" in FACTS, f"run_code returned nothing: {messages}")


async def run_openai_code(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    """openai-agents on a server in code mode: run_code lists, converts to strict, and answers."""
    from agents import Agent, RunContextWrapper
    from agents.mcp import MCPServerStdio

    server = MCPServerStdio(params={"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env()})
    async with server:
        agent = Agent(name="toolhost", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": True})
        tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
        FACTS["tools"] = sorted(t.name for t in tools)
        FACTS["strict"] = {t.name: bool(getattr(t, "strict_json_schema", False)) for t in tools}
        r = await server.call_tool("run_code", {"code": SCRIPTS[args.get("language", "javascript")]})
        FACTS["error"] = bool(r.isError)
        FACTS["text"] = "".join(getattr(b, "text", "") for b in r.content)[:500]


async def run_langchain_code(cmd: list[str], cwd: str, args: dict[str, str]) -> None:
    """langchain-mcp-adapters on a server in code mode: run_code loads, and a script sent through
    it answers."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(
        {"toolhost": {"command": cmd[0], "args": cmd[1:], "cwd": cwd, "env": server_env(), "transport": "stdio"}}
    )
    tools = await client.get_tools()
    by_name = {t.name: t for t in tools}
    FACTS["tools"] = sorted(by_name)
    expect("run_code" in by_name, f"no run_code tool: {sorted(by_name)}")
    script = SCRIPTS[args.get("language", "javascript")]
    FACTS["text"] = str(await by_name["run_code"].ainvoke({"code": script}))[:600]


FRAMEWORKS = {
    "pydantic": run_pydantic,
    "openai": run_openai,
    "langchain": run_langchain,
    "pydantic_code": run_pydantic_code,
    "openai_code": run_openai_code,
    "langchain_code": run_langchain_code,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("framework", choices=sorted(FRAMEWORKS))
    p.add_argument("--cmd", required=True, help="the server command, a JSON list")
    p.add_argument("--cwd", required=True, help="the server's working directory")
    p.add_argument("args", nargs="*", metavar="KEY=VALUE")
    ns = p.parse_intermixed_args()
    cmd = json.loads(ns.cmd)
    args = dict(a.partition("=")[::2] for a in ns.args)
    started = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(FRAMEWORKS[ns.framework](cmd, ns.cwd, args), DEADLINE))
    except BaseException as e:  # noqa: BLE001 - every exception is a failure, reported plainly
        traceback.print_exc()
        print(f"frameworks: FAILED {ns.framework}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    FACTS["framework"] = ns.framework
    FACTS["client_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(FACTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
