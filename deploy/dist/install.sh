#!/usr/bin/env bash
# Installs the official MCP bundle packer that deploy/dist/pack.py packs and
# validates toolhost's .mcpb with: @anthropic-ai/mcpb, pinned in
# package.json + package-lock.json, installed with `npm ci` into
# ${TOOLHOST_DIST_TOOLS_DIR:-<repo root>/target/dist-tools}. Prints the path
# of its CLI on stdout.
#
# Idempotent: a stamp file records the sha256 of the pinned files (and of the
# node used); when it matches, nothing is done. Quiet on success; on failure
# npm's output is shown. Reaches only the npm registry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_DIST_TOOLS_DIR:-$root/target/dist-tools}"

say() { printf 'toolhost dist: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v node >/dev/null || die "node (20 or later) is needed"
command -v npm >/dev/null || die "npm is needed"

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
cli="$dest/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"

# One installer at a time (make dist and the tests share DEST).
if command -v flock >/dev/null; then
    exec 9>"$dest/.install.lock"
    flock 9
fi

stamp="$(
    {
        sha256sum "$here/package.json" "$here/package-lock.json" "$here/install.sh" | cut -d' ' -f1
        node --version
    } | sha256sum | cut -d' ' -f1
)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null)" != "$stamp" || ! -f "$cli" ]]; then
    rm -f "$dest/.stamp"
    say "installing @anthropic-ai/mcpb (package-lock.json) into $dest (node $(node --version), npm $(npm --version))"
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    log="$dest/install.log"
    if ! npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
        cat "$log" >&2
        die "npm ci failed"
    fi
    [[ -f "$cli" ]] || die "npm ci did not install $cli"
    echo "$stamp" >"$dest/.stamp"
fi
echo "$cli"
