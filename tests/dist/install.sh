#!/usr/bin/env bash
# Installs the local registries host/cli/tests/dist.rs installs toolhost's
# packages from, and the installers it runs them with, pinned and isolated
# from the system:
#
#   DEST/venv   a Python virtual environment with requirements.txt:
#               pypiserver (a PyPI index) and uv (`uvx`)
#   DEST/node   package.json + package-lock.json, installed with `npm ci`:
#               verdaccio (an npm registry)
#
# and, through deploy/dist/install.sh, the MCP bundle packer (its own pins).
# DEST is $TOOLHOST_DIST_TESTS_DIR, default <repo root>/target/dist-tests.
#
# Idempotent: a stamp file records the sha256 of the pinned files (and of the
# interpreters used); when it matches, nothing is done. Quiet on success (one
# line per install step on stderr); on failure the installer's output is
# shown. Needs python3 (3.9+, with venv) and node 20+ with npm; reaches only
# the Python and npm package registries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_DIST_TESTS_DIR:-$root/target/dist-tests}"
python="${PYTHON:-python3}"

say() { printf 'toolhost dist tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
# shellcheck source=../lib/install.sh
source "$root/tests/lib/install.sh"

need_python_node "$python"

bash "$root/deploy/dist/install.sh" >/dev/null

install_lock "$dest"
dest="$(cd "$dest" && pwd)"

stamp_file="$dest/.stamp"
stamp="$(pins_stamp "$python" "$here/requirements.txt" "$here/package.json" \
    "$here/package-lock.json" "$here/install.sh")"
if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" \
    && -x "$dest/venv/bin/pypi-server" && -x "$dest/venv/bin/uvx" \
    && -f "$dest/node/node_modules/verdaccio/bin/verdaccio" ]]; then
    exit 0
fi
rm -f "$stamp_file"

logs="$dest/logs"
rm -rf "$logs"
mkdir -p "$logs"

python_tools() {
    local log="$logs/venv.log"
    rm -rf "$dest/venv"
    run "$log" "$python" -m venv "$dest/venv"
    run "$log" "$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$here/requirements.txt"
    run "$log" "$dest/venv/bin/uvx" --version
    run "$log" "$dest/venv/bin/pypi-server" --version
}
node_tools() {
    local log="$logs/node.log"
    mkdir -p "$dest/node"
    cp "$here/package.json" "$here/package-lock.json" "$dest/node/"
    run "$log" npm ci --prefix "$dest/node" --ignore-scripts --no-audit --no-fund --loglevel=error
    run "$log" node "$dest/node/node_modules/verdaccio/bin/verdaccio" --version
}
say "installing $(grep -v '^\s*#' "$here/requirements.txt" | tr '\n' ' ')into $dest/venv ($("$python" --version 2>&1))"
python_tools &
python_pid=$!
say "installing verdaccio (package-lock.json) into $dest/node (node $(node --version), npm $(npm --version))"
node_tools &
node_pid=$!
wait_installs "$logs" "$python_pid" "$node_pid"

echo "$stamp" >"$stamp_file"
say "done"
