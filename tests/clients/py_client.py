#!/usr/bin/env python3
"""Drives `toolhost serve` with the official MCP Python SDK (`mcp`, pinned in
requirements.txt): one scenario per run, which asserts what it can see from
the client side and prints one JSON line of facts for the caller
(host/cli/tests/clients.rs) to check against the disk and the session log.

Usage:
    py_client.py --transport stdio --cmd '["toolhost", "serve", ...]' --cwd DIR SCENARIO [KEY=VALUE ...]
    py_client.py --transport http --url http://127.0.0.1:PORT/mcp SCENARIO [KEY=VALUE ...]

Exits 0 after printing the facts; 1 with `py_client: FAILED ...` on stderr
when an expectation does not hold; 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

# Seconds a whole scenario may take before it is a failure.
SCENARIO_DEADLINE = 90.0
# The fixture the Rust test lays out in the served directory.
NOTES = "/workspace/notes.txt"
WRITTEN = "written by the python client\n"


class Failure(Exception):
    """An expectation that did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def describe(result: types.CallToolResult) -> str:
    return json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True))[:2000]


def value(result: types.CallToolResult, what: str) -> dict[str, Any]:
    """The value of a successful call (already validated by the SDK against the tool's outputSchema)."""
    expect(not result.is_error, f"{what}: expected success, got an error result: {describe(result)}")
    expect(
        isinstance(result.structured_content, dict),
        f"{what}: expected structuredContent to be an object: {describe(result)}",
    )
    expect(bool(text_of(result)), f"{what}: expected rendered text content: {describe(result)}")
    return result.structured_content


def error(result: types.CallToolResult, code: str, what: str) -> dict[str, Any]:
    """The error of a failed call: `isError`, the stable code in `_meta.toolhost.error`, and
    `Error [code]: ...` as the text. `structuredContent` is left out of error results (clients
    validate it against the tool's outputSchema); if a server sends it, it must carry the same code."""
    expect(result.is_error, f"{what}: expected an isError result with code {code}, got: {describe(result)}")
    e = ((result.meta or {}).get("toolhost") or {}).get("error")
    expect(isinstance(e, dict), f"{what}: expected _meta.toolhost.error, got: {describe(result)}")
    expect(e.get("code") == code, f"{what}: expected code {code}, got {e.get('code')!r}: {describe(result)}")
    expect(isinstance(e.get("message"), str) and e["message"], f"{what}: no error message: {describe(result)}")
    text = text_of(result)
    expect(f"[{code}]" in text, f"{what}: expected content text with [{code}], got {text!r}")
    sc = result.structured_content
    if sc is not None:
        got = sc.get("error", {}).get("code") if isinstance(sc, dict) else None
        expect(got == code, f"{what}: structuredContent of an error result does not carry {code}: {describe(result)}")
    return {"code": e["code"], "message": e["message"], "structured": sc is not None}


class Elicitations:
    """An elicitation callback that answers from a script and records what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked = {"mode": params.mode, "message": params.message}
        if isinstance(params, types.ElicitRequestFormParams):
            asked["requested_schema"] = params.requested_schema
        self.asked.append(asked)
        if not self.answers:
            return types.ElicitResult(action="decline")
        return self.answers.pop(0)


def accept(content: dict[str, Any] | None = None) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


class CountingSession(ClientSession):
    """A session that declares no elicitation capability but counts the input requests it gets anyway."""

    input_requests = 0

    async def dispatch_input_request(self, ctx: ClientRequestContext, request: Any) -> Any:
        CountingSession.input_requests += 1
        return await super().dispatch_input_request(ctx, request)


class Opts:
    transport: str
    cmd: str | None
    cwd: str | None
    url: str | None
    scenario: str
    args: dict[str, str]


FACTS: dict[str, Any] = {}


@asynccontextmanager
async def connect(
    opts: Opts,
    elicitation: Callable[..., Awaitable[Any]] | None = None,
    message_handler: Callable[[Any], Awaitable[None]] | None = None,
    session_class: type[ClientSession] = ClientSession,
) -> AsyncIterator[ClientSession]:
    if opts.transport == "stdio":
        cmd = json.loads(opts.cmd or "null")
        expect(isinstance(cmd, list) and len(cmd) > 0, "--cmd must be a JSON list")
        env = {k: os.environ[k] for k in ("TOOLHOST_LOG", "RUST_BACKTRACE", "RUST_LOG") if k in os.environ}
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=opts.cwd, env=env)
        transport = stdio_client(params, errlog=sys.stderr)
    else:
        transport = streamable_http_client(opts.url or "")
    async with transport as (read, write):
        async with session_class(
            read, write, elicitation_callback=elicitation, message_handler=message_handler
        ) as session:
            init = await session.initialize()
            FACTS.setdefault("protocol_version", init.protocol_version)
            FACTS.setdefault("server", init.server_info.name)
            yield session


async def names(session: ClientSession) -> list[str]:
    return [t.name for t in (await session.list_tools()).tools]


# --- scenarios -------------------------------------------------------------


async def scenario_list(opts: Opts) -> None:
    expected = [n for n in opts.args.get("expect", "").split(",") if n]
    async with connect(opts) as s:
        caps = s.server_capabilities
        expect(caps is not None and caps.tools is not None, "the server did not declare the tools capability")
        listed = (await s.list_tools()).tools
        got = [t.name for t in listed]
        expect(got == sorted(got), f"tools are not sorted by name: {got}")
        if expected:
            expect(got == sorted(expected), f"expected exactly {sorted(expected)}, got {got}")
        for t in listed:
            expect(t.input_schema.get("type") == "object", f"{t.name}: inputSchema is not an object schema")
            expect(
                isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object",
                f"{t.name}: no object outputSchema: {t.output_schema!r}",
            )
            expect(bool(t.description), f"{t.name}: no description")
        FACTS["tools"] = got
        FACTS["required"] = {t.name: t.input_schema.get("required", []) for t in listed}
        FACTS["list_changed"] = bool(caps.tools.list_changed)
        FACTS["read_only"] = {
            t.name: bool(t.annotations and t.annotations.read_only_hint) for t in listed
        }


async def scenario_allowed(opts: Opts) -> None:
    async with connect(opts) as s:
        read = value(await s.call_tool("read", {"path": NOTES}), "read notes.txt")
        expect("needle" in text_of(await s.call_tool("read", {"path": NOTES})), "read's text lacks the file")
        window = value(await s.call_tool("read", {"path": "notes.txt", "offset": 2, "limit": 1}), "read a window")
        listing = value(await s.call_tool("list", {"path": "/workspace"}), "list /workspace")
        deep = value(await s.call_tool("list", {"path": "/workspace", "recursive": True}), "list recursively")
        grep = value(await s.call_tool("grep", {"pattern": "needle", "path": "/workspace"}), "grep needle")
        FACTS["read"] = {k: read[k] for k in ("path", "lines", "totalLines", "nextOffset")}
        FACTS["window"] = {k: window[k] for k in ("path", "offset", "lines", "nextOffset")}
        FACTS["list"] = [[e["path"], e["type"]] for e in listing["entries"]]
        FACTS["list_recursive"] = [e["path"] for e in deep["entries"]]
        FACTS["grep"] = [[m["path"], m["line"], m["text"]] for m in grep["matches"]]


async def scenario_errors(opts: Opts) -> None:
    async with connect(opts) as s:
        FACTS["missing"] = error(
            await s.call_tool("read", {"path": "/workspace/no-such-file.txt"}), "not_found", "read a missing file"
        )
        FACTS["bad_type"] = error(
            await s.call_tool("read", {"path": 42}), "invalid_arguments", "read with a number as path"
        )
        FACTS["missing_argument"] = error(
            await s.call_tool("grep", {"path": "/workspace"}), "invalid_arguments", "grep without a pattern"
        )
        FACTS["unknown"] = error(await s.call_tool("no_such_tool", {}), "unknown_tool", "an unknown tool")
        # The session still works after errors.
        value(await s.call_tool("read", {"path": NOTES}), "read after errors")


async def scenario_denied(opts: Opts) -> None:
    async with connect(opts) as s:
        FACTS["etc_passwd"] = error(
            await s.call_tool("read", {"path": "/etc/passwd"}), "path_denied", "read /etc/passwd"
        )
        FACTS["dotdot"] = error(
            await s.call_tool("read", {"path": "/workspace/../../etc/passwd"}), "path_denied", "read through .."
        )
        FACTS["grep_etc"] = error(
            await s.call_tool("grep", {"pattern": "root", "path": "/etc"}), "path_denied", "grep /etc"
        )


async def scenario_ask_accept(opts: Opts) -> None:
    # The write is accepted without touching the form, the edit with approve=true.
    answers = Elicitations(accept(None), accept({"approve": True}))
    async with connect(opts, elicitation=answers) as s:
        written = value(
            await s.call_tool("write", {"path": "/workspace/created.txt", "content": WRITTEN}), "write (accepted)"
        )
        expect(written.get("created") is True, f"write did not report created: {written}")
        value(await s.call_tool("read", {"path": NOTES}), "read before edit")
        edited = value(
            await s.call_tool("edit", {"path": NOTES, "old_text": "alpha line", "new_text": "ALPHA LINE"}),
            "edit (accepted)",
        )
        expect(edited.get("replacements") == 1, f"edit replaced {edited.get('replacements')} times")
    expect(len(answers.asked) == 2, f"expected 2 elicitations, got {answers.asked}")
    for asked, path in zip(answers.asked, ["/workspace/created.txt", NOTES], strict=True):
        expect(asked["mode"] == "form", f"not a form elicitation: {asked}")
        expect(path in asked["message"], f"the approval message does not name {path}: {asked['message']!r}")
        approve = asked.get("requested_schema", {}).get("properties", {}).get("approve", {})
        expect(approve.get("type") == "boolean", f"no boolean `approve` field: {asked}")
    FACTS["asked"] = [a["message"] for a in answers.asked]
    FACTS["write"] = written
    FACTS["edit"] = {k: edited[k] for k in ("path", "replacements", "added", "removed")}


async def scenario_ask_decline(opts: Opts) -> None:
    answers = Elicitations(
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        accept({"approve": False}),
    )
    async with connect(opts, elicitation=answers) as s:
        value(await s.call_tool("read", {"path": NOTES}), "read before edit")
        edit = {"path": NOTES, "old_text": "alpha line", "new_text": "DECLINED"}
        FACTS["decline"] = error(await s.call_tool("edit", edit), "approval_denied", "edit (declined)")
        FACTS["cancel"] = error(
            await s.call_tool("write", {"path": "/workspace/declined.txt", "content": "no\n"}),
            "approval_denied",
            "write (cancelled)",
        )
        FACTS["unchecked"] = error(
            await s.call_tool("edit", edit), "approval_denied", "edit (accepted with approve=false)"
        )
    expect(len(answers.asked) == 3, f"expected 3 elicitations, got {answers.asked}")
    expect(NOTES in answers.asked[0]["message"], f"the message does not name {NOTES}: {answers.asked[0]}")
    expect(
        "/workspace/declined.txt" in answers.asked[1]["message"],
        f"the message does not name /workspace/declined.txt: {answers.asked[1]}",
    )
    FACTS["asked"] = [a["message"] for a in answers.asked]


async def scenario_ask_timeout(opts: Opts) -> None:
    """The user answers (accept) only after the server's approval timeout: the call is denied,
    and the late answer does not disturb the session."""
    delay = float(opts.args.get("delay", "4"))
    asked: list[str] = []
    answered = anyio.Event()

    async def slow(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        try:
            await anyio.sleep(delay)
        finally:
            answered.set()
        return accept({"approve": True})

    async with connect(opts, elicitation=slow) as s:
        started = time.monotonic()
        FACTS["write"] = error(
            await s.call_tool("write", {"path": "/workspace/late.txt", "content": "too late\n"}),
            "approval_denied",
            "write answered after the approval timeout",
        )
        FACTS["denied_after_s"] = round(time.monotonic() - started, 3)
        expect(FACTS["denied_after_s"] < delay, f"the server waited {FACTS['denied_after_s']} s, for the late answer")
        # The late answer goes out (or the server withdrew the request); either way the session goes on.
        with anyio.move_on_after(delay + 2):
            await answered.wait()
        value(await s.call_tool("read", {"path": NOTES}), "read after the late answer")
    expect(len(asked) == 1 and "/workspace/late.txt" in asked[0], f"unexpected elicitations: {asked}")
    FACTS["asked"] = len(asked)


async def scenario_no_elicitation(opts: Opts) -> None:
    async with connect(opts, session_class=CountingSession) as s:
        FACTS["write"] = error(
            await s.call_tool("write", {"path": "/workspace/unasked.txt", "content": "no\n"}),
            "approval_denied",
            "write without elicitation",
        )
        value(await s.call_tool("read", {"path": NOTES}), "read before edit")
        FACTS["edit"] = error(
            await s.call_tool("edit", {"path": NOTES, "old_text": "alpha line", "new_text": "UNASKED"}),
            "approval_denied",
            "edit without elicitation",
        )
    expect(
        CountingSession.input_requests == 0,
        f"the server sent {CountingSession.input_requests} elicitation request(s) to a client without the capability",
    )
    FACTS["asked"] = CountingSession.input_requests


async def scenario_sessions(opts: Opts) -> None:
    expect(opts.transport == "http", "the sessions scenario needs --transport http (two connections)")
    a_answers, b_answers = Elicitations(accept(), accept()), Elicitations(accept(), accept())
    async with connect(opts, elicitation=a_answers) as a, connect(opts, elicitation=b_answers) as b:
        value(await a.call_tool("read", {"path": NOTES}), "A reads")
        FACTS["b_unread"] = error(
            await b.call_tool("edit", {"path": NOTES, "old_text": "omega line", "new_text": "OMEGA LINE"}),
            "stale_baseline",
            "B edits a file only A read",
        )
        expect(not b_answers.asked, f"B was asked to approve a call the baseline check refuses: {b_answers.asked}")
        value(
            await a.call_tool("edit", {"path": NOTES, "old_text": "alpha line", "new_text": "ALPHA LINE"}),
            "A edits what A read",
        )
        value(await b.call_tool("read", {"path": NOTES}), "B reads")
        value(
            await b.call_tool("edit", {"path": NOTES, "old_text": "omega line", "new_text": "OMEGA LINE"}),
            "B edits what B read",
        )
        FACTS["a_stale"] = error(
            await a.call_tool("edit", {"path": NOTES, "old_text": "needle", "new_text": "NEEDLE"}),
            "stale_baseline",
            "A edits a file B changed since",
        )
    FACTS["asked"] = {"a": len(a_answers.asked), "b": len(b_answers.asked)}


async def scenario_cancel(opts: Opts) -> None:
    after = float(opts.args.get("after", "1.0"))
    async with connect(opts) as s:
        started = time.monotonic()
        try:
            # A read timeout abandons the request: the SDK sends notifications/cancelled.
            result = await s.call_tool("spin", {}, read_timeout_seconds=after)
            raise Failure(f"spin returned instead of being cancelled: {describe(result)}")
        except MCPError as e:
            expect(e.code == REQUEST_TIMEOUT, f"spin failed with {e.code} {e}, expected a request timeout")
        FACTS["cancelled_after_s"] = round(time.monotonic() - started, 3)
        started = time.monotonic()
        value(await s.call_tool("read", {"path": NOTES}), "read after the cancel")
        follow = time.monotonic() - started
        FACTS["follow_up_s"] = round(follow, 3)
        expect(follow < 5.0, f"the read after the cancel took {follow:.1f}s")


TOOLBOX_READ_LIST = """version = 1
[[component]]
source = "builtin:read"
[[component]]
source = "builtin:list"
"""

TOOLBOX_BROKEN = """version = 1
[[component]
source = "builtin:read
"""


async def scenario_reload(opts: Opts) -> None:
    toolbox = opts.args.get("toolbox")
    expect(bool(toolbox), "reload needs toolbox=PATH")
    changes: list[float] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changes.append(time.monotonic())
            changed.set()

    async with connect(opts, message_handler=on_message) as s:
        before = await names(s)
        expect(before == ["read"], f"expected only read before the change, got {before}")
        started = time.monotonic()
        with open(toolbox, "w", encoding="utf-8") as f:
            f.write(TOOLBOX_READ_LIST)
        try:
            with anyio.fail_after(10):
                await changed.wait()
        except TimeoutError:
            raise Failure("no notifications/tools/list_changed within 10 s of adding builtin:list") from None
        FACTS["notified_after_s"] = round(time.monotonic() - started, 3)
        after = await names(s)
        expect(after == ["list", "read"], f"expected list and read after the change, got {after}")
        value(await s.call_tool("list", {"path": "/workspace"}), "call the added list tool")
        notified = len(changes)
        with open(toolbox, "w", encoding="utf-8") as f:
            f.write(TOOLBOX_BROKEN)
        await anyio.sleep(3.0)
        still = await names(s)
        expect(still == after, f"a broken toolbox changed the tools: {still}")
        value(await s.call_tool("read", {"path": NOTES}), "read after the broken toolbox")
        FACTS["before"] = before
        FACTS["after"] = after
        FACTS["after_broken"] = still
        FACTS["notified_on_broken"] = len(changes) > notified


async def scenario_fetch(opts: Opts) -> None:
    ok, denied, token = opts.args.get("ok"), opts.args.get("denied"), opts.args.get("token", "")
    expect(bool(ok and denied), "fetch needs ok=URL denied=URL")
    async with connect(opts) as s:
        page = value(await s.call_tool("fetch", {"url": ok}), f"fetch {ok}")
        expect(page.get("status") == 200, f"status {page.get('status')}")
        expect(token in page.get("text", ""), f"the page text lacks {token!r}: {page.get('text')!r}")
        FACTS["page"] = {k: page[k] for k in ("url", "status", "contentType", "text")}
        FACTS["denied"] = error(await s.call_tool("fetch", {"url": denied}), "network_denied", f"fetch {denied}")


SCENARIOS: dict[str, Callable[[Opts], Awaitable[None]]] = {
    "list": scenario_list,
    "allowed": scenario_allowed,
    "errors": scenario_errors,
    "denied": scenario_denied,
    "ask_accept": scenario_ask_accept,
    "ask_decline": scenario_ask_decline,
    "ask_timeout": scenario_ask_timeout,
    "no_elicitation": scenario_no_elicitation,
    "sessions": scenario_sessions,
    "cancel": scenario_cancel,
    "reload": scenario_reload,
    "fetch": scenario_fetch,
}


def parse(argv: list[str]) -> Opts:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=["stdio", "http"], required=True)
    p.add_argument("--cmd", help="stdio: the server command, a JSON list")
    p.add_argument("--cwd", help="stdio: the server's working directory")
    p.add_argument("--url", help="http: the MCP endpoint")
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("args", nargs="*", metavar="KEY=VALUE")
    ns = p.parse_args(argv, namespace=Opts())
    if ns.transport == "stdio" and not ns.cmd:
        p.error("--transport stdio needs --cmd")
    if ns.transport == "http" and not ns.url:
        p.error("--transport http needs --url")
    pairs = {}
    for a in ns.args:
        key, sep, val = a.partition("=")
        if not sep:
            p.error(f"scenario arguments are KEY=VALUE, got {a!r}")
        pairs[key] = val
    ns.args = pairs
    return ns


async def run(opts: Opts) -> None:
    with anyio.fail_after(SCENARIO_DEADLINE):
        await SCENARIOS[opts.scenario](opts)


def failure_in(e: BaseException) -> Failure | None:
    """The expectation failure inside `e` (task groups wrap exceptions in groups)."""
    if isinstance(e, Failure):
        return e
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            if (found := failure_in(inner)) is not None:
                return found
    return None


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside `e`, groups flattened."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


def main() -> int:
    opts = parse(sys.argv[1:])
    started = time.monotonic()
    try:
        anyio.run(run, opts)
    except BaseException as e:  # noqa: BLE001 - every exception is a failure, reported plainly
        failed = failure_in(e)
        if failed is None:
            traceback.print_exc()
            failed = Failure("; ".join(f"{type(x).__name__}: {x}" for x in leaves(e)))
        print(f"py_client: FAILED {opts.scenario} ({opts.transport}): {failed}", file=sys.stderr)
        return 1
    FACTS["scenario"] = opts.scenario
    FACTS["transport"] = opts.transport
    FACTS["client_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(FACTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
