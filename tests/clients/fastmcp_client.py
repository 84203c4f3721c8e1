#!/usr/bin/env python3
"""Drives `toolhost serve --http` with FastMCP's client and its tasks
extension (PyPI `fastmcp-slim[client]` + `fastmcp-tasks`, SEP-2663), the way
its README shows: `Client(url, elicitation_handler=...)` and `call_tool`,
which polls a task to its result without the caller knowing, and
`call_tool_task`, the explicit handle. Nothing here speaks the protocol by
hand. Prints one JSON line of facts for host/cli/tests/tasks.rs.

Usage:
    fastmcp_client.py --url http://127.0.0.1:PORT/mcp
    fastmcp_client.py --cmd '["toolhost", "serve", ...]' --cwd DIR   (stdio)

Scenarios, in one run against one server (`--mode both`):
- `run_code` writing three files becomes a task (its policy says always);
  its approval is the task's `input_required`, answered by the handler
  (accept): the result comes back through `call_tool`;
- the same declined: an error result, nothing written;
- a quick `read` is no task: `call_tool_task` is refused, `call_tool`
  answers;
- a long script through `call_tool_task`: its status is `working`, then it
  is cancelled through the handle and ends `cancelled`.

Exits 0 after printing the facts; 1 with `fastmcp_client: FAILED ...` on
stderr when an expectation does not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
from typing import Any

import fastmcp_tasks
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp_types import ElicitResult

# What the elicitation handler answers, and what it was asked.
ANSWER = {"action": "accept"}
ASKED: list[str] = []


async def answer(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    ASKED.append(message)
    if ANSWER["action"] == "accept":
        return ElicitResult(action="accept", content={"approve": True})
    return ElicitResult(action="decline")


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


WRITES = """
for (const name of ["one", "two", "three"]) {
  await tools.write({path: `/workspace/PREFIX-${name}.txt`, content: `${name} from a task\\n`});
}
return "done";
"""


def script(prefix: str) -> str:
    return WRITES.replace("PREFIX", prefix)


# Writes a file (staged), then spins until it is stopped.
LONG = """
await tools.write({path: "/workspace/cancelled.txt", content: "must not land\\n"});
let n = 0;
for (;;) { n += 1; }
"""


def text_of(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


async def scenarios(target: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"fastmcp_tasks": fastmcp_tasks.__version__}
    async with Client(target, elicitation_handler=answer, timeout=120) as client:
        facts["protocol_version"] = str(getattr(client, "protocol_version", ""))

        # 1. A script that writes: a task, asked through the task.
        started = time.monotonic()
        result = await client.call_tool("run_code", {"code": script("accepted")})
        facts["accepted"] = {
            "text": text_of(result),
            "is_error": result.is_error,
            "asked": list(ASKED),
            "seconds": round(time.monotonic() - started, 3),
        }

        # 2. Declined: nothing lands.
        ASKED.clear()
        ANSWER["action"] = "decline"
        result = await client.call_tool("run_code", {"code": script("declined")}, raise_on_error=False)
        facts["declined"] = {"text": text_of(result), "is_error": result.is_error, "asked": len(ASKED)}
        ANSWER["action"] = "accept"

        # 3. A quick read is answered at once: no task.
        try:
            await fastmcp_tasks.call_tool_task(client, "read", {"path": "notes.txt"})
            facts["read_tasked"] = True
        except ToolError as e:
            facts["read_tasked"] = False
            facts["read_refused"] = str(e)
        result = await client.call_tool("read", {"path": "notes.txt"})
        facts["read"] = text_of(result)

        # 4. A long script through the handle: working, then cancelled.
        task = await fastmcp_tasks.call_tool_task(client, "run_code", {"code": LONG})
        facts["task_id"] = task.task_id
        first = await task.status()
        facts["first_status"] = first.status
        await asyncio.sleep(0.5)
        await task.cancel()
        deadline = time.monotonic() + 30
        status = first.status
        while status not in ("completed", "failed", "cancelled") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            status = (await task.status()).status
        facts["cancelled_status"] = status
    return facts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="http: the MCP endpoint")
    p.add_argument("--cmd", help="stdio: the server command, a JSON list")
    p.add_argument("--cwd", help="stdio: the server's working directory")
    args = p.parse_args()
    if args.cmd:
        cmd = json.loads(args.cmd)
        target: Any = StdioTransport(command=cmd[0], args=cmd[1:], cwd=args.cwd)
    else:
        target = args.url
    try:
        facts = asyncio.run(asyncio.wait_for(scenarios(target), 100))
    except Exception:
        print("fastmcp_client: FAILED", file=sys.stderr)
        traceback.print_exc()
        return 1
    print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
