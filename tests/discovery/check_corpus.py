#!/usr/bin/env python3
"""Validate the progressive-discovery test corpus (stdlib only).

Checks: every catalog file parses and has the expected shape; tool names match
[a-z][a-z0-9_]*, are at most 64 bytes, avoid the names reserved by built-ins and
are unique across all files; every inputSchema is a JSON object schema; every
query's `expect` (and each name in its optional `also`, tools that are equally
right, such as a feature-flagged variant) names a catalog tool; at least half of the queries share no
word (of 3+ letters, server id words aside) with the expected tool's name;
SOURCES.md lists every server.
Prints counts; exits non-zero on any failure.
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATALOG = HERE / "catalog"
QUERIES = HERE / "queries.json"
SOURCES = CATALOG / "SOURCES.md"

NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
RESERVED = {"read", "write", "edit", "search", "fetch", "run_code", "search_tools",
            "list", "glob", "grep", "patch"}
MIN_TOOLS, MIN_SERVERS, MIN_QUERIES, MIN_QUERY_SERVERS = 500, 15, 80, 12
MAX_DESCRIPTION = 1500

errors = []


def err(msg):
    errors.append(msg)


def check_source(where, src):
    items = src if isinstance(src, list) else [src]
    if not items:
        err(f"{where}: empty source")
    for s in items:
        if not isinstance(s, dict):
            err(f"{where}: source entry is not an object")
            continue
        for key in ("repo", "path", "url"):
            if not isinstance(s.get(key), str) or not s.get(key):
                err(f"{where}: source lacks {key}")
        commit = s.get("commit")
        if commit is not None and not re.fullmatch(r"[0-9a-f]{40}", commit):
            err(f"{where}: source commit is not 40 hex digits: {commit!r}")


def check_schema(where, schema):
    if not isinstance(schema, dict):
        err(f"{where}: inputSchema is not an object")
        return
    if schema.get("type") != "object":
        err(f"{where}: inputSchema.type is {schema.get('type')!r}, not 'object'")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        err(f"{where}: inputSchema.properties is not an object")
        props = {}
    for pname, p in props.items():
        if not isinstance(p, (dict, bool)):
            err(f"{where}: property {pname!r} is not a schema")
    req = schema.get("required", [])
    if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
        err(f"{where}: inputSchema.required is not a list of strings")


def main():
    tools = {}          # name -> server
    per_server = {}
    files = sorted(CATALOG.glob("*.json"))
    if not files:
        err("no catalog files")
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except Exception as e:  # noqa: BLE001
            err(f"{f.name}: does not parse: {e}")
            continue
        server = doc.get("server")
        if not isinstance(server, str) or not NAME_RE.fullmatch(server):
            err(f"{f.name}: bad server id {server!r}")
            continue
        if f.stem != server:
            err(f"{f.name}: file name does not match server {server!r}")
        check_source(f.name, doc.get("source"))
        tlist = doc.get("tools")
        if not isinstance(tlist, list) or not tlist:
            err(f"{f.name}: tools is not a non-empty list")
            continue
        per_server[server] = len(tlist)
        for i, t in enumerate(tlist):
            where = f"{f.name}#{i}"
            if not isinstance(t, dict):
                err(f"{where}: tool is not an object")
                continue
            name = t.get("name")
            where = f"{f.name}:{name}"
            if not isinstance(name, str) or not NAME_RE.fullmatch(name):
                err(f"{where}: name does not match [a-z][a-z0-9_]*")
                continue
            if len(name.encode()) > 64:
                err(f"{where}: name longer than 64 bytes")
            if name in RESERVED:
                err(f"{where}: name is reserved by a built-in")
            if name in tools:
                err(f"{where}: duplicate name (also in {tools[name]})")
            tools[name] = server
            if not isinstance(t.get("original_name"), str) or not t["original_name"]:
                err(f"{where}: missing original_name")
            desc = t.get("description")
            if not isinstance(desc, str):
                err(f"{where}: description is not a string")
            elif len(desc) > MAX_DESCRIPTION:
                err(f"{where}: description longer than {MAX_DESCRIPTION} characters")
            if "title" in t and (not isinstance(t["title"], str) or not t["title"]):
                err(f"{where}: title present but not a non-empty string")
            if "annotations" in t and not isinstance(t["annotations"], dict):
                err(f"{where}: annotations is not an object")
            check_schema(where, t.get("inputSchema"))
            if "outputSchema" in t and not isinstance(t["outputSchema"], dict):
                err(f"{where}: outputSchema is not an object")

    # SOURCES.md
    if not SOURCES.exists():
        err("SOURCES.md is missing")
    else:
        text = SOURCES.read_text(encoding="utf-8")
        for server in per_server:
            if not re.search(rf"^\|\s*{re.escape(server)}\s*\|", text, re.M):
                err(f"SOURCES.md has no table row for {server}")

    # queries
    try:
        queries = json.loads(QUERIES.read_text(encoding="utf-8"))
    except Exception as e:  # noqa: BLE001
        err(f"queries.json does not parse: {e}")
        queries = []
    if not isinstance(queries, list):
        err("queries.json is not a list")
        queries = []
    seen_q = set()
    q_servers = Counter()
    no_overlap = 0
    for i, q in enumerate(queries):
        if not isinstance(q, dict) or not isinstance(q.get("query"), str) or not q["query"].strip():
            err(f"query #{i}: missing query text")
            continue
        if q["query"] in seen_q:
            err(f"query #{i}: duplicate query text")
        seen_q.add(q["query"])
        exp = q.get("expect")
        if exp not in tools:
            err(f"query #{i} {q['query']!r}: expect {exp!r} is not a catalog tool")
            continue
        also = q.get("also", [])
        if not isinstance(also, list):
            err(f"query #{i}: also is not a list")
            also = []
        for a in also:
            if a not in tools:
                err(f"query #{i} {q['query']!r}: also {a!r} is not a catalog tool")
        q_servers[tools[exp]] += 1
        words = set(re.findall(r"[a-z0-9]+", q["query"].lower()))
        # naming the service ("on Slack", "in Jira") is wanted for disambiguation,
        # so the server id's own words do not count as reuse
        server_words = set(tools[exp].split("_")) | {"api"}
        name_words = {w for w in exp.split("_") if len(w) > 2} - server_words
        if not (words & name_words):
            no_overlap += 1

    n_tools, n_servers = len(tools), len(per_server)
    if n_tools < MIN_TOOLS:
        err(f"only {n_tools} tools (want >= {MIN_TOOLS})")
    if n_servers < MIN_SERVERS:
        err(f"only {n_servers} servers (want >= {MIN_SERVERS})")
    if len(queries) < MIN_QUERIES:
        err(f"only {len(queries)} queries (want >= {MIN_QUERIES})")
    if len(q_servers) < MIN_QUERY_SERVERS:
        err(f"queries cover only {len(q_servers)} servers (want >= {MIN_QUERY_SERVERS})")
    if queries and no_overlap * 2 < len(queries):
        err(f"only {no_overlap}/{len(queries)} queries avoid the expected tool name's words (want at least half)")

    for server, n in sorted(per_server.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{server:20s} {n:4d} tools  {q_servers.get(server, 0):3d} queries")
    print(f"servers: {n_servers}  tools: {n_tools}  queries: {len(queries)} "
          f"over {len(q_servers)} servers  avoiding tool-name words: {no_overlap}")
    if errors:
        for e in errors:
            print("ERROR:", e)
        print(f"FAILED with {len(errors)} error(s)")
        return 1
    print("corpus OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
