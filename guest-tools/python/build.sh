#!/usr/bin/env bash
# Builds a Python tool component for toolhost.
#
#   guest-tools/python/build.sh [OUTPUT.wasm] [TOOL]
#
# OUTPUT defaults to target/python-guests/tool_<TOOL>.wasm, TOOL to `table`
# (the directory tools/<TOOL>/, whose app.py is the entry module).
#
# 1. Creates the build venv if it is missing or its requirements changed:
#    ${TOOLHOST_PY_VENV:-target/python-guests/venv}, with the pinned
#    requirements.txt (componentize-py, wasm-tools).
# 2. Runs componentize-py against the contract (wit/v0.3.0, world
#    tool-provider: exports `tool`, imports `context`) plus wit/ here (the
#    same world with wasi:cli/environment's initial-cwd; see wit/world.wit).
# 3. Replaces the wasi:sockets imports CPython's libc brings along with
#    trapping stubs (composed in with wasm-tools): the host refuses a
#    component importing wasi:sockets unless its policy grants network, and
#    a table tool needs none. Calling a stub traps.
#
# Nothing is rebuilt when the sources are unchanged since the last build
# (their digest is kept beside the output, in OUTPUT.sources).
#
# Environment: TOOLHOST_PY_VENV (the venv), PYTHON (the interpreter that
# creates it; default python3, 3.9 or later), TOOLHOST_PY_REBUILD=1 (build
# even when up to date).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"
tool="${2:-table}"
out="${1:-$root/target/python-guests/tool_$tool.wasm}"
venv="${TOOLHOST_PY_VENV:-$root/target/python-guests/venv}"

if [[ ! -f "$here/tools/$tool/app.py" ]]; then
    echo "build.sh: no tool '$tool' ($here/tools/$tool/app.py is missing)" >&2
    exit 2
fi

# ── 0. up to date? ──────────────────────────────────────────────────────
# componentize-py's output differs from build to build (and so would its
# compiled artifact in the host's cache), so the component is rebuilt only
# when what it is built from changed: the tool, the kit, the WIT (the
# contract and wit/ here), the pinned requirements and this script.
sources_digest() {
    find "$here/tools/$tool" "$here/kit" "$here/wit" "$root/wit/v0.3.0" \
        "$here/requirements.txt" "$here/build.sh" "$here/../build-lib.sh" -type f \
        ! -path '*/__pycache__/*' ! -path '*/tests/*' -print0 | th_files_digest | th_digest
}
digest="$(sources_digest)"
th_up_to_date "$out" "$digest" TOOLHOST_PY_REBUILD && exit 0

# ── 1. the venv ─────────────────────────────────────────────────────────
th_python_kit_venv "$venv" build.sh
wasm_tools="$venv/bin/wasm-tools"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ── 2. componentize ─────────────────────────────────────────────────────
# From a copy of the sources: pre-initialization runs CPython over the
# python path with write access, and it would leave __pycache__ (CPython
# 3.14 bytecode) in the source tree. Tests are not part of a component.
mkdir -p "$work/src/tool" "$work/src/kit"
tar -C "$here/tools/$tool" --exclude=tests --exclude=__pycache__ -cf - . | tar -C "$work/src/tool" -xf -
tar -C "$here/kit" --exclude=tests --exclude=__pycache__ -cf - . | tar -C "$work/src/kit" -xf -
# -d: the contract first, then the world here that includes it.
"$venv/bin/componentize-py" --quiet \
    -d "$root/wit/v0.3.0" -d "$here/wit" -w toolhost:python-guest/tool-provider \
    componentize app \
    -p "$work/src/tool" -p "$work/src/kit" \
    -o "$work/raw.wasm"

# ── 3. stub wasi:sockets ────────────────────────────────────────────────
mapfile -t sockets < <("$wasm_tools" component wit "$work/raw.wasm" |
    sed -n 's/^ *import \(wasi:sockets\/[^;]*\);$/\1/p')
if ((${#sockets[@]})); then
    # The component's own WIT (every package it uses, at the versions it
    # uses) gives the interfaces the stub must export.
    "$wasm_tools" component wit "$work/raw.wasm" --out-dir "$work/wit" >/dev/null
    mkdir "$work/stub"
    cp -r "$work/wit/deps" "$work/stub/deps"
    {
        echo "package toolhost:sockets-stub;"
        echo "world stub {"
        printf '    export %s;\n' "${sockets[@]}"
        echo "}"
    } >"$work/stub/stub.wit"
    # --dummy: a core module whose every export is `unreachable`.
    "$wasm_tools" component embed --dummy "$work/stub" -w stub -o "$work/stub.core.wasm"
    "$wasm_tools" component new "$work/stub.core.wasm" -o "$work/stub.wasm"
    # `wasm-tools compose` is deprecated in favour of `wac`, which is not on
    # PyPI; it still does this one job. Its deprecation notice is dropped.
    "$wasm_tools" compose "$work/raw.wasm" -d "$work/stub.wasm" -o "$work/tool.wasm" >"$work/compose.log" 2>&1 ||
        { cat "$work/compose.log" >&2; exit 1; }
else
    cp "$work/raw.wasm" "$work/tool.wasm"
fi
"$wasm_tools" validate "$work/tool.wasm"
"$wasm_tools" component wit "$work/tool.wasm" >"$work/tool.wit"
if grep -q '^ *import wasi:sockets/' "$work/tool.wit"; then
    echo "build.sh: the component still imports wasi:sockets" >&2
    exit 1
fi
if ! grep -q '^ *export toolhost:tool/tool@0\.3\.0;' "$work/tool.wit"; then
    echo "build.sh: the component does not export toolhost:tool/tool@0.3.0" >&2
    exit 1
fi

th_install "$work/tool.wasm" "$out" "$digest" "${#sockets[@]} wasi:sockets imports stubbed"
