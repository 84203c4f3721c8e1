#!/usr/bin/env bash
# Installs the official MCP client SDKs that host/cli/tests/clients.rs drives
# toolhost with, pinned and isolated from the system:
#
#   DEST/venv          a Python virtual environment with requirements.txt
#                      (the MCP Python SDK, 2.x)
#   DEST/frameworks    another with requirements-frameworks.txt (pydantic-ai,
#                      openai-agents, langchain-mcp-adapters: the SDK's 1.x)
#   DEST/node          package.json + package-lock.json, installed with `npm ci`
#
# DEST is $TOOLHOST_CLIENTS_DIR, default <repo root>/target/clients.
#
# Idempotent: a stamp file records the sha256 of the pinned files (and of the
# interpreters used); when it matches, nothing is done. Quiet on success
# (one line per install step on stderr); on failure the installer's output
# is shown. Needs python3 (3.10+, with venv, or pip to fall back on) and
# node 20+ with npm; reaches only the Python and npm package registries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_CLIENTS_DIR:-$root/target/clients}"
python="${PYTHON:-python3}"

say() { printf 'toolhost clients: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
# shellcheck source=../lib/install.sh
source "$root/tests/lib/install.sh"

need_python_node "$python"

install_lock "$dest"
dest="$(cd "$dest" && pwd)"

stamp_file="$dest/.stamp"
stamp="$(pins_stamp "$python" "$here/requirements.txt" "$here/requirements-frameworks.txt" \
    "$here/package.json" "$here/package-lock.json" "$here/install.sh")"
if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" \
    && -x "$dest/venv/bin/python" && -x "$dest/frameworks/bin/python" \
    && -d "$dest/node/node_modules/@modelcontextprotocol/sdk" ]]; then
    exit 0
fi
rm -f "$stamp_file"

# The three installs run side by side (pip is one thread; npm waits on the
# network), each with a log of its own.
logs="$dest/logs"
rm -rf "$logs"
mkdir -p "$logs"

# Python: fresh venvs with the pinned packages, compiled to bytecode at
# install (pip's default). Without it every client the tests start compiles
# what it imports, each time, wherever bytecode is not written back (read-only
# trees, PYTHONDONTWRITEBYTECODE): importing the SDK took 2.1 s of CPU
# against 1.1 s, the three frameworks 8 s against 5 s.
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "python3 is $("$python" --version 2>&1); the MCP Python SDK needs 3.10 or later"
pip_flags=(install --quiet --disable-pip-version-check --no-input)
# venv DIR REQUIREMENTS IMPORTS: a fresh virtual environment with
# REQUIREMENTS that can import IMPORTS; its log is logs/<DIR's name>.log.
venv() {
    local dir="$1" requirements="$2" imports="$3"
    local log
    log="$logs/$(basename "$dir").log"
    rm -rf "$dir"
    if "$python" -m venv "$dir" >>"$log" 2>&1; then
        run "$log" "$dir/bin/python" -m pip "${pip_flags[@]}" -r "$requirements"
    elif "$python" -m pip --version >/dev/null 2>&1; then
        # No ensurepip (Debian without python3-venv): a venv without pip, filled
        # by the system's pip (22.3+ knows --python).
        rm -rf "$dir"
        run "$log" "$python" -m venv --without-pip "$dir"
        run "$log" "$python" -m pip --python "$dir/bin/python" "${pip_flags[@]}" -r "$requirements"
    else
        cat "$log" >&2
        die "python3 cannot create a virtual environment with pip (Debian: apt-get install python3-venv)"
    fi
    run "$log" "$dir/bin/python" -c "import $imports"
}
# Node: the locked tree, exactly.
node_sdk() {
    mkdir -p "$dest/node"
    cp "$here/package.json" "$here/package-lock.json" "$dest/node/"
    run "$logs/node.log" npm ci --prefix "$dest/node" --ignore-scripts --no-audit --no-fund --loglevel=error
    run "$logs/node.log" node --input-type=module -e "
import { createRequire } from 'node:module';
const require = createRequire('$dest/node/package.json');
require.resolve('@modelcontextprotocol/sdk/client/index.js');
"
}
say "installing $(grep -v '^\s*#' "$here/requirements.txt" | tr '\n' ' ')into $dest/venv ($("$python" --version 2>&1))"
venv "$dest/venv" "$here/requirements.txt" \
    'mcp, mcp.client.stdio, mcp.client.streamable_http, mcp.client.client, fastmcp, fastmcp_tasks, opentelemetry.sdk.trace, opentelemetry.proto.collector.trace.v1.trace_service_pb2' &
sdk_pid=$!
say "installing pydantic-ai, openai-agents and langchain-mcp-adapters ($(grep -c '==' "$here/requirements-frameworks.txt") pinned packages) into $dest/frameworks"
venv "$dest/frameworks" "$here/requirements-frameworks.txt" \
    'pydantic_ai.mcp, agents.mcp, langchain_mcp_adapters.client' &
frameworks_pid=$!
say "installing @modelcontextprotocol/sdk (package-lock.json) into $dest/node (node $(node --version), npm $(npm --version))"
node_sdk &
node_pid=$!
wait_installs "$logs" "$sdk_pid" "$frameworks_pid" "$node_pid"

echo "$stamp" >"$stamp_file"
say "done"
