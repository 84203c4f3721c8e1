#!/usr/bin/env python3
"""Calls `toolhost serve --http` with the MCP Python SDK's `Client` (its
README's high-level API, default `auto` mode) under an OpenTelemetry SDK
tracer, so the SDK sends W3C trace context in each request's `_meta`
(SEP-414). Inside one span of its own (`agent turn`) it runs a script that
reads two files at once. Prints one JSON line: the trace id, and the
client's spans (kept in memory) for host/cli/tests/traces.rs to join with
what toolhost exported.

Usage:
    traced_client.py --url http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import json
import sys

import anyio
from mcp.client.client import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SCRIPT = """
const [a, b] = await Promise.all([
  tools.read({path: "notes.txt"}),
  tools.read({path: "more.txt"}),
]);
return [a.lines.length, b.lines.length];
"""


async def run(url: str) -> dict:
    async with Client(url) as client:
        with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
            result = await client.call_tool("run_code", {"code": SCRIPT})
        return {
            "trace_id": format(turn.get_span_context().trace_id, "032x"),
            "is_error": result.is_error,
            "value": result.structured_content,
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    args = p.parse_args()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    facts = anyio.run(run, args.url)
    facts["spans"] = [
        {
            "name": s.name,
            "span_id": format(s.context.span_id, "016x"),
            "parent_span_id": format(s.parent.span_id, "016x") if s.parent else "",
            "trace_id": format(s.context.trace_id, "032x"),
        }
        for s in exporter.get_finished_spans()
    ]
    print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
