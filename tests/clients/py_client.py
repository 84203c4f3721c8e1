#!/usr/bin/env python3
"""Drives `toolhost serve` with the official MCP Python SDK (`mcp`, pinned in
requirements.txt): one scenario per run, which asserts what it can see from
the client side and prints one JSON line of facts for the caller
(host/cli/tests/clients.rs) to check against the disk and the session log.

Usage:
    py_client.py --transport stdio --cmd '["toolhost", "serve", ...]' --cwd DIR SCENARIO [KEY=VALUE ...]
    py_client.py --transport http --url http://127.0.0.1:PORT/mcp SCENARIO [KEY=VALUE ...]

    --api session (default): the SDK's low-level `ClientSession`, with the
        legacy `initialize` handshake.
    --api client --mode auto|2026-07-28|legacy: the high-level `Client` that
        the SDK's README shows, in its default configuration (`auto` probes
        `server/discover` and then speaks 2026-07-28).

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
import httpx2 as httpx
import mcp_types as types
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

# Seconds a whole scenario may take before it is a failure (a scenario that
# waits for a rebuild gets longer from its caller).
SCENARIO_DEADLINE = float(os.environ.get("PY_CLIENT_DEADLINE", "90"))
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
    api: str
    mode: str
    cmd: str | None
    cwd: str | None
    url: str | None
    scenario: str
    args: dict[str, str]


FACTS: dict[str, Any] = {}


def server_params(opts: Opts) -> StdioServerParameters:
    cmd = json.loads(opts.cmd or "null")
    expect(isinstance(cmd, list) and len(cmd) > 0, "--cmd must be a JSON list")
    env = {k: os.environ[k] for k in ("TOOLHOST_LOG", "RUST_BACKTRACE", "RUST_LOG", "HOME", "TOOLHOST_SEARCH_MODEL") if k in os.environ}
    return StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=opts.cwd, env=env)


def modern(s: Any) -> bool:
    """Whether the connection speaks 2026-07-28 (no server requests: approvals come back as
    `input_required` results)."""
    return isinstance(s, Client) and s.protocol_version >= "2026-07-28"


def stateless(opts: Opts, s: Any) -> bool:
    """2026-07-28 over HTTP: every request is its own session, so a read gives a later edit its
    fresh baseline only through the baseline handle its result carries."""
    return modern(s) and opts.transport == "http"


@asynccontextmanager
async def connect(
    opts: Opts,
    elicitation: Callable[..., Awaitable[Any]] | None = None,
    message_handler: Callable[[Any], Awaitable[None]] | None = None,
    session_class: type[ClientSession] = ClientSession,
    logging_callback: Callable[..., Awaitable[None]] | None = None,
    log_level: str | None = None,
) -> AsyncIterator[Any]:
    """A connected client: a `ClientSession` (--api session) or a high-level `Client` (--api client)."""
    started = time.monotonic()
    if opts.api == "client":
        server: Any = server_params(opts) if opts.transport == "stdio" else (opts.url or "")
        client = Client(
            server,
            mode=opts.mode,
            elicitation_callback=elicitation,
            message_handler=message_handler,
            logging_callback=logging_callback,
            log_level=log_level,
        )
        async with client:
            FACTS.setdefault("protocol_version", client.protocol_version)
            FACTS.setdefault("server", client.server_info.name if client.server_info else None)
            FACTS.setdefault("connect_s", round(time.monotonic() - started, 3))
            yield client
        return
    if opts.transport == "stdio":
        transport = stdio_client(server_params(opts), errlog=sys.stderr)
    else:
        transport = streamable_http_client(opts.url or "")
    async with transport as (read, write):
        async with session_class(
            read,
            write,
            elicitation_callback=elicitation,
            message_handler=message_handler,
            logging_callback=logging_callback,
        ) as session:
            init = await session.initialize()
            FACTS.setdefault("protocol_version", init.protocol_version)
            FACTS.setdefault("server", init.server_info.name)
            FACTS.setdefault("connect_s", round(time.monotonic() - started, 3))
            yield session


@asynccontextmanager
async def tool_changes(s: Any, on_change: Callable[[], None]) -> AsyncIterator[None]:
    """Calls `on_change` on every tools/list_changed while open: on 2026-07-28 through a
    `subscriptions/listen` stream (the only way a stateless server can say it), before
    through the connection's notifications (the caller's message handler)."""
    if not modern(s):
        yield
        return
    async with anyio.create_task_group() as tg:
        async with s.listen(tools_list_changed=True) as sub:
            expect(bool(sub.honored.tools_list_changed), f"the server did not honour tools_list_changed: {sub.honored}")

            async def pump() -> None:
                async for _event in sub:
                    on_change()

            tg.start_soon(pump)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()


async def names(session: Any) -> list[str]:
    return [t.name for t in (await session.list_tools()).tools]


# --- scenarios -------------------------------------------------------------


async def scenario_list(opts: Opts) -> None:
    expected = [n for n in opts.args.get("expect", "").split(",") if n]
    async with connect(opts) as s:
        # A Client pinned to a revision adopts it without asking the server (no
        # `server/discover`): it knows no capabilities.
        pinned = opts.api == "client" and opts.mode not in ("auto", "legacy")
        caps = s.server_capabilities
        expect(
            pinned or (caps is not None and caps.tools is not None), "the server did not declare the tools capability"
        )
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
        FACTS["list_changed"] = None if pinned else bool(caps.tools.list_changed)
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
        read = await s.call_tool("read", {"path": NOTES})
        edit = {"path": NOTES, "old_text": "alpha line", "new_text": "ALPHA LINE"}
        if stateless(opts, s):
            # Every request is its own session: the edit presents the read's handle.
            edit["baseline"] = issued(read, NOTES, "read before edit")
        else:
            value(read, "read before edit")
        edited = value(await s.call_tool("edit", edit), "edit (accepted)")
        expect(edited.get("replacements") == 1, f"edit replaced {edited.get('replacements')} times")
        paths = ["/workspace/created.txt", NOTES]
    expect(len(answers.asked) == 2, f"expected 2 elicitations, got {answers.asked}")
    for asked, path in zip(answers.asked, paths, strict=True):
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
        read = await s.call_tool("read", {"path": NOTES})
        edit_tool, edit = "edit", {"path": NOTES, "old_text": "alpha line", "new_text": "DECLINED"}
        if stateless(opts, s):
            edit["baseline"] = issued(read, NOTES, "read before edit")
        else:
            value(read, "read before edit")
        asked_first = NOTES
        FACTS["decline"] = error(await s.call_tool(edit_tool, edit), "approval_denied", "edit (declined)")
        FACTS["cancel"] = error(
            await s.call_tool("write", {"path": "/workspace/declined.txt", "content": "no\n"}),
            "approval_denied",
            "write (cancelled)",
        )
        FACTS["unchecked"] = error(
            await s.call_tool(edit_tool, edit), "approval_denied", "edit (accepted with approve=false)"
        )
    expect(len(answers.asked) == 3, f"expected 3 elicitations, got {answers.asked}")
    expect(
        asked_first in answers.asked[0]["message"],
        f"the message does not name {asked_first}: {answers.asked[0]}",
    )
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
    # A high-level Client without an elicitation callback declares no
    # elicitation capability; were it asked anyway, its call would raise.
    async with connect(opts, session_class=CountingSession) as s:
        FACTS["write"] = error(
            await s.call_tool("write", {"path": "/workspace/unasked.txt", "content": "no\n"}),
            "approval_denied",
            "write without elicitation",
        )
        if not stateless(opts, s):
            value(await s.call_tool("read", {"path": NOTES}), "read before edit")
            FACTS["edit"] = error(
                await s.call_tool("edit", {"path": NOTES, "old_text": "alpha line", "new_text": "UNASKED"}),
                "approval_denied",
                "edit without elicitation",
            )
        else:
            FACTS["edit"] = error(
                await s.call_tool("write", {"path": "/workspace/unasked2.txt", "content": "no\n"}),
                "approval_denied",
                "a second write without elicitation",
            )
    expect(
        CountingSession.input_requests == 0,
        f"the server sent {CountingSession.input_requests} elicitation request(s) to a client without the capability",
    )
    FACTS["asked"] = CountingSession.input_requests


async def scenario_sessions(opts: Opts) -> None:
    expect(opts.transport == "http", "the sessions scenario needs --transport http (two connections)")
    expect(opts.api == "session", "the sessions scenario needs sessions (--api session)")
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


def issued(result: types.CallToolResult, path: str, what: str) -> str:
    """The baseline handle a successful call issued for `path`: in its value and in its text."""
    v = value(result, what)
    handle = (v.get("baselines") or {}).get(path)
    expect(isinstance(handle, str) and handle.startswith("bh1."), f"{what}: no baseline handle for {path}: {describe(result)}")
    expect(handle in text_of(result), f"{what}: the handle is not in the text the model reads: {text_of(result)[:300]!r}")
    return handle


def baseline_error(result: types.CallToolResult, case: str, what: str) -> dict[str, Any]:
    e = error(result, "stale_baseline", what)
    info = (((result.meta or {}).get("toolhost") or {}).get("error") or {}).get("info") or {}
    expect(info.get("baseline") == case, f"{what}: expected baseline case {case!r}, got {info}: {describe(result)}")
    return e


async def scenario_handles(opts: Opts) -> None:
    """Read → edit → edit with baseline handles, where every request is its own session (2026-07-28
    over HTTP): each result carries the handle the next change presents. Without a handle, with a
    handle replayed after the file changed, or with one sealed by another server, the edit is
    refused `stale_baseline` (and nobody is asked to approve it). `foreign_url=URL`: a server with
    another secret over the same directory, whose handle of the file must not open here."""
    yes = [accept({"approve": True}) for _ in range(8)]
    answers = Elicitations(*yes)
    async with connect(opts, elicitation=answers) as a:
        expect(stateless(opts, a), "the handles scenario is about stateless requests (2026-07-28 over HTTP)")
        tools = {t.name: t for t in (await a.list_tools()).tools}
        expect("baseline" in tools["edit"].input_schema.get("properties", {}), "edit does not advertise `baseline`")
        expect(
            "baselines" in (tools["read"].output_schema or {}).get("properties", {}),
            "read does not advertise `baselines` in its output schema",
        )
        h1 = issued(await a.call_tool("read", {"path": NOTES}), NOTES, "read")
        h2 = issued(
            await a.call_tool("edit", {"path": NOTES, "old_text": "alpha line", "new_text": "ALPHA LINE", "baseline": h1}),
            NOTES,
            "edit with the read's handle",
        )
        h3 = issued(
            await a.call_tool("edit", {"path": NOTES, "old_text": "omega line", "new_text": "OMEGA LINE", "baseline": h2}),
            NOTES,
            "a second edit with the first edit's handle",
        )
        asked = len(answers.asked)
        FACTS["replayed"] = baseline_error(
            await a.call_tool("edit", {"path": NOTES, "old_text": "needle", "new_text": "NEEDLE", "baseline": h1}),
            "changed",
            "the read's handle replayed after the file changed",
        )
        if "foreign_url" in opts.args:
            async with Client(opts.args["foreign_url"], mode=opts.mode) as other:
                foreign = issued(await other.call_tool("read", {"path": NOTES}), NOTES, "a read on the other server")
            FACTS["foreign"] = baseline_error(
                await a.call_tool(
                    "edit", {"path": NOTES, "old_text": "needle", "new_text": "NEEDLE", "baseline": foreign}
                ),
                "invalid",
                "a handle sealed by a server with another secret",
            )
        # One character of the content digest changed: the tag no longer matches.
        forged = h3[:20] + ("A" if h3[20] != "A" else "B") + h3[21:]
        FACTS["forged"] = baseline_error(
            await a.call_tool("edit", {"path": NOTES, "old_text": "needle", "new_text": "NEEDLE", "baseline": forged}),
            "invalid",
            "a forged handle",
        )
        expect(len(answers.asked) == asked, f"a refused edit was put to the user: {answers.asked[asked:]}")
        # The repeat check, without sessions: per principal.
        missing = {"path": "/workspace/missing.txt"}
        first = await a.call_tool("read", missing)
        expect(first.is_error, f"reading a missing file succeeded: {describe(first)}")
        FACTS["repeated"] = error(await a.call_tool("read", missing), "repeated_failure", "the same failing read again")
    async with connect(opts, elicitation=Elicitations(*yes)) as b:
        FACTS["unread"] = baseline_error(
            await b.call_tool("edit", {"path": NOTES, "old_text": "needle", "new_text": "NEEDLE"}),
            "unread",
            "a second client edits without a read",
        )
    FACTS["handle"] = h3
    FACTS["asked"] = len(answers.asked)


async def scenario_replicas(opts: Opts) -> None:
    """One client of several replicas behind a load balancer (2026-07-28 over HTTP, every request
    its own session, landing wherever the balancer sends it): read → edit → edit with baseline
    handles, and a result cut to its budget whose full text (an artifact) is read back with
    resources/read. `big=PATH`: a file whose read is cut."""
    answers = Elicitations(*[accept({"approve": True}) for _ in range(4)])
    async with connect(opts, elicitation=answers) as c:
        expect(stateless(opts, c), "the replicas scenario is about stateless requests (2026-07-28 over HTTP)")
        h = issued(await c.call_tool("read", {"path": NOTES}), NOTES, "read")
        for old, new in (("alpha line", "ALPHA LINE"), ("omega line", "OMEGA LINE")):
            h = issued(
                await c.call_tool("edit", {"path": NOTES, "old_text": old, "new_text": new, "baseline": h}),
                NOTES,
                f"edit {old!r}",
            )
        # An approval across replicas: the `input_required` result comes from one replica, the
        # call sent again with the answer lands on another, which opens the state (the secret is
        # shared) and records it as used in the shared directory.
        made = value(
            await c.call_tool("write", {"path": "/workspace/created.txt", "content": "approved across replicas\n"}),
            "write (approved)",
        )
        expect(made.get("created") is True, f"write did not create: {made}")
        expect(len(answers.asked) == 1, f"expected one approval, got {answers.asked}")
        big = await c.call_tool("read", {"path": opts.args["big"]})
        links = [b for b in big.content if isinstance(b, types.ResourceLink)]
        expect(len(links) == 1, f"the big read was not cut to an artifact: {describe(big)}")
        uri = str(links[0].uri)
        pages = []
        for _ in range(3):
            read = await c.read_resource(uri)
            pages.append(sum(len(getattr(x, "text", "")) for x in read.contents))
        expect(all(p > 0 for p in pages), f"the artifact read back empty: {pages}")
        FACTS["artifact"] = uri
        FACTS["pages"] = pages
        FACTS["handle"] = h


class MemoryTokens:
    """Token storage in memory (`mcp.client.auth.TokenStorage`)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


async def scenario_oauth(opts: Opts) -> None:
    """The SDK's own OAuth client against a server that is an OAuth resource server: it meets the
    401, follows the Protected Resource Metadata to the authorization server, gets a token with the
    client-credentials grant (for this resource), and retries. Args: issuer, client_id,
    client_secret, scope."""
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    a = opts.args
    provider = ClientCredentialsOAuthProvider(
        server_url=opts.url or "",
        storage=MemoryTokens(),
        client_id=a["client_id"],
        client_secret=a["client_secret"],
        scope=a.get("scope"),
        issuer=a["issuer"],
    )
    async with httpx.AsyncClient(auth=provider) as http:
        async with Client(streamable_http_client(opts.url or "", http_client=http), mode=opts.mode) as c:
            FACTS["protocol_version"] = c.protocol_version
            FACTS["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
            h = issued(await c.call_tool("read", {"path": NOTES}), NOTES, "read with a token")
            # `edit` needs a scope the first token lacks: 403 insufficient_scope, and the SDK
            # steps up (a new token with the scope the challenge names) and retries.
            edited = value(
                await c.call_tool("edit", {"path": NOTES, "old_text": "alpha", "new_text": "ALPHA", "baseline": h}),
                "edit after the step-up",
            )
            FACTS["edited"] = edited.get("replacements")
            FACTS["tools_after"] = sorted(t.name for t in (await c.list_tools()).tools)
            FACTS["scope"] = provider.context.current_tokens.scope if provider.context.current_tokens else None


async def listed(s: Any, tool: str, within: float = 120.0) -> None:
    """Waits until `tool` is listed, as a client calls what it has seen: on a first start its
    component may still be compiling (the list then names it as loading)."""
    with anyio.fail_after(within):
        while tool not in await names(s):
            await anyio.sleep(0.2)


async def scenario_cancel(opts: Opts) -> None:
    after = float(opts.args.get("after", "1.0"))
    async with connect(opts) as s:
        await listed(s, "spin")
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

    def changed_now() -> None:
        changes.append(time.monotonic())
        changed.set()

    async with connect(opts, message_handler=on_message) as s, tool_changes(s, changed_now):
        before = await names(s)
        expect(before == ["read"], f"expected only read before the change, got {before}")
        started = time.monotonic()
        with open(toolbox, "w", encoding="utf-8") as f:
            f.write(TOOLBOX_READ_LIST)
        # A notification may be on its way from the first load (a stream opened while the
        # server's components were still loading hears them arrive): each one is followed by
        # a list, until the list shows the change.
        after, seen = before, 0
        try:
            with anyio.fail_after(10):
                # A tool added by a reload comes after those listed before it
                # (the advertised prefix stays put).
                while after != ["read", "list"]:
                    if len(changes) == seen:
                        changed = anyio.Event()
                        await changed.wait()
                    seen = len(changes)
                    after = await names(s)
        except TimeoutError:
            raise Failure(
                f"no notifications/tools/list_changed bringing list within 10 s of adding builtin:list: {after}"
            ) from None
        FACTS["notified_after_s"] = round(time.monotonic() - started, 3)
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


# --- 2026-07-28 on the wire, approvals inline, a cold first start ------------------

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "py_client wire", "version": "1"},
}


class Wire:
    """Raw JSON-RPC to the server, 2026-07-28 per-request metadata on every request: nothing of
    the SDK between the test and the bytes but its generated wire models, which validate."""

    def __init__(self, opts: Opts) -> None:
        self.opts = opts
        self.next_id = 0
        self.proc: Any = None
        self.http: Any = None
        if opts.transport == "stdio":
            import subprocess

            params = server_params(opts)
            self.proc = subprocess.Popen(
                [params.command, *params.args],
                cwd=params.cwd,
                env={**os.environ, **(params.env or {})},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sys.stderr,
                text=True,
            )
        else:
            self.http = httpx.Client(timeout=60)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        if self.http is not None:
            self.http.close()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": {**params, "_meta": MODERN_META}}
        if self.proc is not None:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
            while True:
                line = self.proc.stdout.readline()
                expect(bool(line), f"the server closed stdout before answering {method}")
                reply = json.loads(line)
                if reply.get("id") == self.next_id:
                    return reply
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        elif method == "resources/read":
            headers["Mcp-Name"] = params["uri"]
        response = self.http.post(self.opts.url, json=msg, headers=headers)
        expect(response.status_code == 200, f"{method}: HTTP {response.status_code}: {response.text[:500]}")
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            for line in response.text.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    reply = json.loads(line[5:])
                    if reply.get("id") == self.next_id:
                        return reply
            raise Failure(f"{method}: no reply in the event stream: {response.text[:500]}")
        return response.json()


def wire_check(opts: Opts) -> None:
    from mcp_types import _v2026_07_28 as wire

    with open("big.txt", "w", encoding="utf-8") as f:
        f.write("".join(f"line {i:05} of a long file\n" for i in range(1, 3001)))
    w = Wire(opts)
    validated: list[str] = []

    def check(method: str, params: dict[str, Any], model: Any) -> dict[str, Any]:
        reply = w.request(method, params)
        expect("result" in reply, f"{method}: expected a result, got {json.dumps(reply)[:500]}")
        result = reply["result"]
        try:
            model.model_validate(result)
        except Exception as e:  # noqa: BLE001 - a validation error is the finding
            raise Failure(f"{method}: the result is not a valid 2026-07-28 {model.__name__}: {e}") from None
        validated.append(f"{method}:{model.__name__}")
        return result

    try:
        check("server/discover", {}, wire.DiscoverResult)
        listed = check("tools/list", {}, wire.ListToolsResult)
        expect(any(t["name"] == "read" for t in listed["tools"]), f"no read tool: {listed}")
        check("resources/list", {}, wire.ListResourcesResult)
        check("tools/call", {"name": "read", "arguments": {"path": NOTES}}, wire.CallToolResult)
        missing = check("tools/call", {"name": "read", "arguments": {"path": "/workspace/nope"}}, wire.CallToolResult)
        expect(missing.get("isError") is True, f"a missing file is not an error result: {missing}")
        unknown = check("tools/call", {"name": "no_such_tool", "arguments": {}}, wire.CallToolResult)
        expect(unknown.get("isError") is True, f"an unknown tool is not an error result: {unknown}")
        big = check("tools/call", {"name": "read", "arguments": {"path": "big.txt", "limit": 3000}}, wire.CallToolResult)
        links = [b["uri"] for b in big["content"] if b.get("type") == "resource_link"]
        expect(len(links) == 1, f"a cut result links its full text once: {json.dumps(big)[:500]}")
        page = check("resources/read", {"uri": links[0]}, wire.ReadResourceResult)
        expect("line 00001" in page["contents"][0]["text"], "the artifact's first page")
        args = {"path": "/workspace/wire.txt", "content": "written on the wire\n"}
        asked = check("tools/call", {"name": "write", "arguments": args}, wire.InputRequiredResult)
        expect(asked["resultType"] == "input_required", f"an ask is an input_required result: {asked}")
        (key, req), = asked["inputRequests"].items()
        expect(req["method"] == "elicitation/create", f"the input request is an elicitation: {req}")
        answers = {key: {"action": "accept", "content": {"approve": True}}}
        done = check(
            "tools/call",
            {"name": "write", "arguments": args, "inputResponses": answers, "requestState": asked["requestState"]},
            wire.CallToolResult,
        )
        expect(done.get("isError") is not True, f"the approved write failed: {done}")
    finally:
        w.close()
    expect(os.path.exists("wire.txt"), "the approved write did not write")
    FACTS["validated"] = validated


async def scenario_wire(opts: Opts) -> None:
    await anyio.to_thread.run_sync(wire_check, opts)


async def scenario_mrtr(opts: Opts) -> None:
    """The approval's requestState, driven by hand: tampered, moved to another call, replayed and
    expired states do not approve; the real one does, once."""
    wait = float(opts.args.get("expire_after", "0"))
    async with connect(opts, elicitation=Elicitations()) as c:
        expect(modern(c), f"the mrtr scenario needs a 2026-07-28 connection, got {c.protocol_version}")
        s = c.session
        args = {"path": "/workspace/mrtr.txt", "content": "approved once\n"}

        async def ask(arguments: dict[str, Any]) -> types.InputRequiredResult:
            first = await s.call_tool("write", arguments, allow_input_required=True)
            expect(isinstance(first, types.InputRequiredResult), f"expected input_required, got {first!r}")
            expect(bool(first.request_state) and bool(first.input_requests), f"no state or request: {first!r}")
            return first

        first = await ask(args)
        (key,) = list(first.input_requests or {})
        yes = {key: types.ElicitResult(action="accept", content={"approve": True})}
        state = first.request_state or ""

        async def retry(arguments: dict[str, Any], st: str, what: str) -> Any:
            r = await s.call_tool("write", arguments, input_responses=yes, request_state=st, allow_input_required=True)
            expect(isinstance(r, types.CallToolResult), f"{what}: expected a final result, got {r!r}")
            return r

        tampered = state[:-2] + ("AB" if not state.endswith("AB") else "BA")
        FACTS["tampered"] = error(await retry(args, tampered, "tampered"), "approval_denied", "a tampered state")
        other = {"path": "/workspace/mrtr.txt", "content": "something else\n"}
        FACTS["other_call"] = error(await retry(other, state, "another call"), "approval_denied", "another call's state")
        expect(not os.path.exists("mrtr.txt"), "a refused state wrote the file")
        value(await retry(args, state, "the real state"), "the approved write")
        expect(os.path.exists("mrtr.txt"), "the approved write did not write")
        os.remove("mrtr.txt")
        FACTS["replayed"] = error(await retry(args, state, "replayed"), "approval_denied", "a replayed state")
        expect(not os.path.exists("mrtr.txt"), "a replayed state wrote the file again")
        if wait > 0:
            # Other arguments: the same call right after its refusal would be refused as a
            # repeated failure before its state is looked at.
            late_args = {"path": "/workspace/mrtr-late.txt", "content": "too late\n"}
            late = await ask(late_args)
            await anyio.sleep(wait)
            FACTS["expired"] = error(
                await retry(late_args, late.request_state or "", "expired"), "approval_denied", "an expired state"
            )
            expect(not os.path.exists("mrtr-late.txt"), "an expired state wrote the file")


async def scenario_cold(opts: Opts) -> None:
    """A first start: connect and list at once, then the slow component's tools arrive with
    tools/list_changed and answer."""
    slow = opts.args.get("slow", "")
    call_args = json.loads(opts.args.get("args", "{}"))
    changes = [0]
    logs: list[str] = []

    def changed() -> None:
        changes[0] += 1

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    started = time.monotonic()
    async with (
        connect(opts, message_handler=on_message, logging_callback=on_log, log_level="info") as s,
        tool_changes(s, changed),
    ):
        if not modern(s):
            await s.set_logging_level("info")
        first = await s.list_tools()
        FACTS["first_list_s"] = round(time.monotonic() - started, 3)
        FACTS["first_tools"] = [t.name for t in first.tools]
        FACTS["first_meta"] = (first.meta or {}).get("toolhost")
        tools = FACTS["first_tools"]
        with anyio.fail_after(120):
            while slow not in tools:
                seen = changes[0]
                while changes[0] == seen:
                    await anyio.sleep(0.05)
                tools = await names(s)
        FACTS["changes"] = changes[0]
        FACTS["complete_s"] = round(time.monotonic() - started, 3)
        FACTS["tools"] = tools
        FACTS["slow_value"] = value(await s.call_tool(slow, call_args), f"call {slow}")
    FACTS["logs"] = logs


async def scenario_cold_search(opts: Opts) -> None:
    """A first start with deferred tools: once `search_tools` is listed, a search while the slow
    component still compiles either finds its tool or names the component as still loading
    (never a silent miss); searched again until nothing is loading, it finds the tool; then a
    search in other words than a tool's own (paraphrase=...) is recorded."""
    query = opts.args.get("query", "")
    slow = opts.args.get("slow", "")
    call_args = json.loads(opts.args.get("args", "{}"))
    changes = [0]

    def changed() -> None:
        changes[0] += 1

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed()

    def found(v: dict[str, Any]) -> list[str]:
        return [t.get("name") for t in v.get("tools", [])]

    async with connect(opts, message_handler=on_message) as s, tool_changes(s, changed):
        with anyio.fail_after(120):
            while "search_tools" not in await names(s):
                seen = changes[0]
                while changes[0] == seen:
                    await anyio.sleep(0.05)
        first = value(await s.call_tool("search_tools", {"query": query}), "search_tools during the load")
        FACTS["first_found"] = found(first)
        FACTS["first_loading"] = first.get("loading")
        searches = 1
        with anyio.fail_after(180):
            again = first
            while "loading" in again:
                await anyio.sleep(0.5)
                again = value(await s.call_tool("search_tools", {"query": query}), "search_tools again")
                searches += 1
        FACTS["searches"] = searches
        FACTS["settled_found"] = found(again)
        FACTS["slow_value"] = value(await s.call_tool(slow, call_args), f"call {slow}")
        if paraphrase := opts.args.get("paraphrase"):
            # Said in other words than the tool's own: found by meaning.
            meant = value(await s.call_tool("search_tools", {"query": paraphrase}), "search_tools by meaning")
            FACTS["paraphrase_found"] = found(meant)


async def scenario_call(opts: Opts) -> None:
    """Lists the tools and calls one: tool=NAME args=JSON."""
    tool = opts.args.get("tool", "")
    arguments = json.loads(opts.args.get("args", "{}"))
    async with connect(opts) as s:
        FACTS["tools"] = await names(s)
        result = await s.call_tool(tool, arguments)
        FACTS["is_error"] = bool(result.is_error)
        FACTS["value"] = result.structured_content
        FACTS["text"] = text_of(result)[:500]


async def scenario_effects(opts: Opts) -> None:
    # `write` asks after a staged run (approve = "effects"): the form shows
    # the diff of what the call would change. Declined, nothing changes;
    # accepted, exactly the diff shown is committed.
    answers = Elicitations(types.ElicitResult(action="decline"), accept({"approve": True}))
    async with connect(opts, elicitation=answers) as s:
        value(await s.call_tool("read", {"path": NOTES}), "read before writing")
        FACTS["declined"] = error(
            await s.call_tool("write", {"path": NOTES, "content": "declined\n"}), "approval_denied", "write (declined)"
        )
        FACTS["after_decline"] = value(await s.call_tool("read", {"path": NOTES}), "read after the decline")
        r = await s.call_tool("write", {"path": NOTES, "content": "alpha line\nrewritten\n"})
        FACTS["written"] = value(r, "write (accepted)")
        effects = ((r.meta or {}).get("toolhost") or {}).get("extra", {}).get("effects")
        expect(isinstance(effects, dict), f"no effects in the result's _meta: {r.meta}")
        FACTS["effects"] = effects
        page = await s.read_resource(effects["diff"])
        FACTS["diff"] = page.contents[0].text
    FACTS["asked"] = [a["message"] for a in answers.asked]


@asynccontextmanager
async def asking_reports(opts: Opts, on_log: Any) -> AsyncIterator[Any]:
    """A session that asks for log messages at level info (the request's own logLevel from
    2026-07-28 on, which the SDK's log_level sets; logging/setLevel before), to `on_log`."""
    level = "info"
    async with connect(opts, logging_callback=on_log, log_level=level) as s:
        if not modern(s):
            await s.set_logging_level(level)
        yield s


async def scenario_context(opts: Opts) -> None:
    """A contract 0.3.0 tool's progress and log messages reach the SDK's own callbacks (the
    conformance fixtures: test_tool_with_progress, test_tool_with_logging), and only when asked:
    a call without a progress callback gets no progress, a session that set no level no logs."""
    logs: list[dict[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    # First without asking for anything: nothing may arrive.
    async with connect(opts, logging_callback=on_log) as s:
        await listed(s, "test_tool_with_logging")
        value(await s.call_tool("test_tool_with_logging", {}), "logging, unasked")
        value(await s.call_tool("test_tool_with_progress", {}), "progress, unasked")
    expect(logs == [], f"log messages nobody asked for: {logs}")

    # Then asking: a level and a progress callback.
    async with asking_reports(opts, on_log) as s:
        progress: list[dict[str, Any]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": done, "total": total})

        result = await s.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        value(result, "progress")
        expect(text_of(result) == "Tool with progress executed successfully", describe(result))
        result = await s.call_tool("test_tool_with_logging", {})
        value(result, "logging")
        # Over the legacy HTTP transport a log message rides the standalone GET stream (rmcp
        # routes only progress, by its token, onto the request's own stream), so the last one
        # may come after the response: it gets a moment before the session closes.
        with anyio.move_on_after(5):
            while len(logs) < 3:
                await anyio.sleep(0.02)
    FACTS["progress"] = progress
    FACTS["logs"] = logs


# Code mode's scripts (the served toolbox: the built-ins, `--mode code`), shared
# with ts_client.mjs. `asking`: `edit` asks from its arguments; `write` asks once
# the script ends, from its effects (the whole script's diff): two questions,
# each an `input_required` round trip under 2026-07-28, the script going on
# from its checkpoint.
SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def script(name: str, language: str = "javascript") -> str:
    """The script `scripts/NAME.js`, or `NAME.py` in Python (the server's `--language`)."""
    ext = "py" if language == "python" else "js"
    with open(os.path.join(SCRIPTS_DIR, f"{name}.{ext}"), encoding="utf-8") as f:
        return f.read()


def declared(name: str, language: str) -> str:
    """How code mode's declarations spell the tool `name`."""
    return f"async def {name}(" if language == "python" else f"function {name}("


def script_result(r: types.CallToolResult, what: str) -> Any:
    """What a script returned: run_code's value is `{result, console}`."""
    v = value(r, what)
    expect(set(v) == {"result", "console"}, f"{what}: not run_code's value: {v}")
    return v["result"]


async def scenario_code(opts: Opts) -> None:
    """Code mode: only run_code is listed; scripts read and grep, catch a denied path, write
    through asking tools (accepted once, declined once), throw after two writes, and spin.
    language=python: the server runs Python (`--language python`), the scripts are `.py`."""
    language = opts.args.get("language", "javascript")
    # Accept the edit and the first script's effects; then decline the edit
    # (the script goes on) and its effects (nothing is committed).
    answers = Elicitations(
        accept({"approve": True}),
        accept({"approve": True}),
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="decline"),
    )
    async with connect(opts, elicitation=answers) as s:
        listed = await s.list_tools()
        FACTS["tools"] = [t.name for t in listed.tools]
        (run_code,) = [t for t in listed.tools if t.name == "run_code"]
        FACTS["description_bytes"] = len(run_code.description or "")
        expect(declared("read", language) in (run_code.description or ""), "no typed API in run_code's description")
        FACTS["summary"] = script_result(await s.call_tool("run_code", {"code": script("summary", language)}), "summary")
        FACTS["denied"] = script_result(await s.call_tool("run_code", {"code": script("denied", language)}), "denied")
        accepted = await s.call_tool("run_code", {"code": script("asking", language)})
        FACTS["accepted"] = script_result(accepted, "accepted")
        FACTS["accepted_calls"] = ((accepted.meta or {}).get("toolhost") or {}).get("extra", {}).get("calls")
        expect(os.path.exists("from-script.txt"), "the accepted script's write was not committed")
        os.rename("from-script.txt", "from-script-accepted.txt")
        FACTS["declined"] = error(await s.call_tool("run_code", {"code": script("asking", language)}), "approval_denied", "declined")
        expect(not os.path.exists("from-script.txt"), "the declined script's write was committed")
        FACTS["thrown"] = error(await s.call_tool("run_code", {"code": script("throws", language)}), "script_error", "throws")
        spun = await s.call_tool("run_code", {"code": script("spins", language)})
        expect(bool(spun.is_error), f"spinning did not fail: {describe(spun)}")
        FACTS["spun"] = ((spun.meta or {}).get("toolhost") or {}).get("error")
    FACTS["asked"] = [a["message"] for a in answers.asked]


async def scenario_code_context(opts: Opts) -> None:
    """Code mode with the conformance fixtures: what a script's calls report while they run
    reaches the SDK's callbacks live, as the run_code call's own progress and log, each message
    naming the call. language=python: the server runs Python."""
    language = opts.args.get("language", "javascript")
    code = {
        "javascript": "await tools.test_tool_with_progress({});\nawait tools.test_tool_with_logging({});\nreturn 'done';",
        "python": "await tools.test_tool_with_progress()\nawait tools.test_tool_with_logging()\n'done'",
    }[language]
    logs: list[dict[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    async with asking_reports(opts, on_log) as s:
        progress: list[dict[str, Any]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": done, "message": message})

        result = await s.call_tool("run_code", {"code": code}, progress_callback=on_progress)
        FACTS["result"] = script_result(result, "code_context")
        with anyio.move_on_after(5):
            while len(logs) < 3:
                await anyio.sleep(0.02)
    FACTS["progress"] = progress
    FACTS["logs"] = logs


async def scenario_discovery(opts: Opts) -> None:
    """Progressive discovery: the list is short and offers search_tools; a search finds a
    deferred tool, with its schema; the tool is called by name and, its policy being `ask`,
    still asks (accepted once, declined once). query=TEXT tool=NAME args=JSON."""
    query, tool = opts.args["query"], opts.args["tool"]
    arguments = json.loads(opts.args.get("args", "{}"))
    answers = Elicitations(accept({"approve": True}), types.ElicitResult(action="decline"))
    async with connect(opts, elicitation=answers) as s:
        first = await s.list_tools()
        FACTS["tools"] = [t.name for t in first.tools]
        FACTS["next_cursor"] = first.next_cursor
        again = await s.list_tools()
        FACTS["list_stable"] = [t.model_dump(mode="json") for t in first.tools] == [
            t.model_dump(mode="json") for t in again.tools
        ]
        found = value(await s.call_tool("search_tools", {"query": query, "limit": 5}), "search_tools")
        FACTS["found"] = [t["name"] for t in found["tools"]]
        (hit,) = [t for t in found["tools"] if t["name"] == tool] or [None]
        expect(hit is not None, f"search_tools did not find {tool}: {FACTS['found']}")
        # What a search returns is what tools/list would have shown: it validates as a Tool.
        FACTS["found_tool"] = types.Tool.model_validate(hit).model_dump(mode="json", by_alias=True, exclude_none=True)
        FACTS["accepted"] = value(await s.call_tool(tool, arguments), f"{tool} (accepted)")
        FACTS["declined"] = error(await s.call_tool(tool, arguments), "approval_denied", f"{tool} (declined)")
    FACTS["asked"] = [a["message"] for a in answers.asked]


async def scenario_dev(opts: Opts) -> None:
    """`toolhost dev` serving a tool project: the tool as built; then its source changes on disk
    (its description, `old` → `new` in `source`) while the client stays connected, and a
    tools/list_changed brings the rebuilt tool, which answers."""
    tool, source, old, new = (opts.args.get(k, "") for k in ("tool", "source", "old", "new"))
    expect(all((tool, source, old, new)), "dev needs tool=, source=, old= and new=")
    changes: list[float] = []
    changed = anyio.Event()

    def changed_now() -> None:
        changes.append(time.monotonic())
        changed.set()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed_now()

    async def description() -> str:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        expect(tool in listed, f"{tool} is not listed: {sorted(listed)}")
        return listed[tool].description or ""

    async with connect(opts, message_handler=on_message) as s, tool_changes(s, changed_now):
        before = await description()
        expect(old in before, f"expected {old!r} in the description, got {before!r}")
        FACTS["value_before"] = value(await s.call_tool(tool, {"path": "notes.txt"}), "call before the edit")
        with open(source, encoding="utf-8") as f:
            text = f.read()
        expect(old in text, f"{old!r} is not in {source}")
        with open(source, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))
        started = time.monotonic()
        after, seen = before, 0
        try:
            with anyio.fail_after(SCENARIO_DEADLINE - 10):
                while new not in after:
                    if len(changes) == seen:
                        changed = anyio.Event()
                        await changed.wait()
                    seen = len(changes)
                    after = await description()
        except TimeoutError:
            raise Failure(f"the rebuilt tool never came: the description is still {after!r}") from None
        FACTS["reloaded_after_s"] = round(time.monotonic() - started, 3)
        FACTS["before"] = before
        FACTS["after"] = after
        FACTS["value_after"] = value(await s.call_tool(tool, {"path": "notes.txt"}), "call after the rebuild")


# The `integers` record of the plain test component (wit/test-plain): every width,
# the 64-bit ones past 2^53 as decimal strings.
PLAIN_INTS = {
    "a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295,
    "f": -2147483648, "g": "18446744073709551615", "h": "-9223372036854775808",
}


async def scenario_plain(opts: Opts) -> None:
    """A plain component's functions (wit/test-plain): listed with the schemas and
    descriptions of their WIT, called, and failing with their codes."""
    async with connect(opts) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        for name in ("greet", "integers", "lookup_find", "points", "zero"):
            expect(name in listed, f"{name} is not listed: {sorted(listed)}")
        greet = listed["greet"]
        expect(greet.description == "Greets someone by name.", f"greet's description: {greet.description!r}")
        expect(greet.input_schema.get("required") == ["name"], f"greet's inputSchema: {greet.input_schema}")
        point = listed["points"].input_schema["properties"]["items"]["items"]
        expect(point.get("title") == "point", f"points' item schema: {point}")
        r = await s.call_tool("greet", {"name": "Ana"})
        expect(not r.is_error and text_of(r) == "Hello, Ana!", f"greet: {describe(r)}")
        FACTS["greet_output_schema"] = greet.output_schema
        FACTS["greet_structured"] = r.structured_content
        FACTS["integers"] = value(await s.call_tool("integers", {"v": PLAIN_INTS}), "integers")
        FACTS["not_found"] = error(
            await s.call_tool("lookup_find", {"name": "zzz"}), "not_found", "lookup_find of an unknown name"
        )
        FACTS["out_of_range"] = error(
            await s.call_tool("integers", {"v": {**PLAIN_INTS, "a": 256}}), "invalid_arguments", "a u8 of 256"
        )
        FACTS["tools"] = sorted(listed)


SCENARIOS: dict[str, Callable[[Opts], Awaitable[None]]] = {
    "plain": scenario_plain,
    "dev": scenario_dev,
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
    "wire": scenario_wire,
    "mrtr": scenario_mrtr,
    "code": scenario_code,
    "cold": scenario_cold,
    "cold_search": scenario_cold_search,
    "call": scenario_call,
    "discovery": scenario_discovery,
    "effects": scenario_effects,
    "handles": scenario_handles,
    "replicas": scenario_replicas,
    "oauth": scenario_oauth,
    "context": scenario_context,
    "code_context": scenario_code_context,
}


def parse(argv: list[str]) -> Opts:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=["stdio", "http"], required=True)
    p.add_argument("--api", choices=["session", "client"], default="session")
    p.add_argument("--mode", default="auto", help="--api client: auto, 2026-07-28 or legacy")
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
