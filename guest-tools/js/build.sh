#!/usr/bin/env bash
# Builds a JavaScript tool component for toolhost.
#
#   guest-tools/js/build.sh [OUTPUT.wasm] [TOOL]
#
# OUTPUT defaults to target/js-guests/tool_<TOOL>.wasm, TOOL to `markdown`
# (the directory tools/<TOOL>/, whose app.js is the entry module).
#
# 1. Installs the pinned npm packages if they are missing or changed
#    (install.sh: componentize-js 0.22.0 and jco 1.34.0, with `npm ci`).
# 2. Runs componentize-js on a copy of the kit and the tool against wit/
#    here (the contract's tool-provider world, toolhost:tool@0.3.0 from
#    wit/v0.3.0, plus wasi:cli/environment and wasi:filesystem/preopens, see
#    wit/world.wit), with the engine's `http`
#    and `fetch-event` features disabled: otherwise the component imports
#    wasi:http, which the host refuses unless the policy grants network.
# 3. Checks that every import is one a read-only file-system policy grants
#    (wasi:cli, io, clocks, random, filesystem and the contract's types and
#    context) and that the component exports toolhost:tool/tool@0.3.0, and
#    validates it with wasm-tools.
#
# Nothing is rebuilt when the sources are unchanged since the last build
# (their digest is kept beside the output, in OUTPUT.sources).
#
# Environment: TOOLHOST_JS_NODE (where install.sh installs the npm
# packages), WASM_TOOLS (a wasm-tools binary; default: the Python guests'
# venv's, ${TOOLHOST_PY_VENV:-target/python-guests/venv}, else one installed
# from requirements.txt into ${TOOLHOST_JS_VENV:-target/js-guests/venv}),
# TOOLHOST_JS_REBUILD=1 (build even when up to date).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"
tool="${2:-markdown}"
out="${1:-$root/target/js-guests/tool_$tool.wasm}"
node_dir="${TOOLHOST_JS_NODE:-$root/target/js-guests/node}"

if [[ ! -f "$here/tools/$tool/app.js" ]]; then
    echo "build.sh: no tool '$tool' ($here/tools/$tool/app.js is missing)" >&2
    exit 2
fi

# What goes into the component: the kit and the tool, without tests,
# scripts, the policy and the kit's Node-only modules (testing.js, node.js).
sources() {
    find "$here/kit" "$here/tools/$tool" -type f \
        ! -path '*/test/*' ! -path "$here/tools/$tool/scripts/*" ! -name policy.toml \
        ! -path "$here/kit/testing.js" ! -path "$here/kit/node.js" -print0
}

# ── 0. up to date? ─────────────────────────────────────────────────────────
# componentize-js output differs from build to build (and so would its
# compiled artifact in the host's cache), so the component is rebuilt only
# when what it is built from changed: the sources, the WIT (wit/ here and
# the contract), the pinned packages and this script.
sources_digest() {
    {
        sources
        find "$here/wit" "$root/wit/v0.3.0" -type f -print0
        printf '%s\0' "$here/package.json" "$here/package-lock.json" "$here/build.sh" "$here/../build-lib.sh"
    } | th_files_digest | th_digest
}
digest="$(sources_digest)"
th_up_to_date "$out" "$digest" TOOLHOST_JS_REBUILD && exit 0

# ── 1. the npm packages, wasm-tools ────────────────────────────────────────
TOOLHOST_JS_NODE="$node_dir" "$here/install.sh"
componentize=("node" "$node_dir/node_modules/@bytecodealliance/componentize-js/src/cli.js")

wasm_tools="${WASM_TOOLS:-}"
if [[ -z "$wasm_tools" ]]; then
    # The Python guests' venv once its install has finished (its stamp is
    # written last; the two languages may build at the same time).
    py_venv="${TOOLHOST_PY_VENV:-$root/target/python-guests/venv}"
    if [[ -x "$py_venv/bin/wasm-tools" && -f "$py_venv/.toolhost-requirements.txt" ]]; then
        wasm_tools="$py_venv/bin/wasm-tools"
    else
        venv="${TOOLHOST_JS_VENV:-$root/target/js-guests/venv}"
        if [[ ! -x "$venv/bin/wasm-tools" ]] || ! cmp -s "$here/requirements.txt" "$venv/.toolhost-requirements.txt"; then
            echo "build.sh: installing wasm-tools (requirements.txt) into $venv" >&2
            "${PYTHON:-python3}" -m venv "$venv"
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
            cp "$here/requirements.txt" "$venv/.toolhost-requirements.txt"
        fi
        wasm_tools="$venv/bin/wasm-tools"
    fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ── 2. componentize ────────────────────────────────────────────────────────
# A copy of the sources, in the same layout (the tool imports ../../kit/):
# componentize-js maps the directory it runs in to `/` while it evaluates
# the modules at build time, and only what is under it can be imported.
mkdir -p "$work/src"
(cd "$here" && sources | sed -z "s|^$here/||" | tar --null -T - -cf -) | tar -C "$work/src" -xf -
# The WIT: this world, its WASI deps, and the contract as a dependency.
mkdir -p "$work/wit/deps/toolhost-tool"
cp -r "$here/wit/." "$work/wit/"
cp "$root/wit/v0.3.0/"*.wit "$work/wit/deps/toolhost-tool/"
(
    cd "$work/src"
    "${componentize[@]}" "tools/$tool/app.js" \
        --wit "$work/wit" --world-name toolhost:js-guest/tool-provider \
        --disable http fetch-event \
        -o "$work/tool.wasm"
)
[[ -f "$work/tool.wasm" ]] || { echo "build.sh: componentize-js wrote no component" >&2; exit 1; }

# ── 3. check the imports, validate ─────────────────────────────────────────
"$wasm_tools" validate "$work/tool.wasm"
"$wasm_tools" component wit "$work/tool.wasm" >"$work/tool.wit"
if ! grep -q '^ *export toolhost:tool/tool@0\.3\.0;' "$work/tool.wit"; then
    echo "build.sh: the component does not export toolhost:tool/tool@0.3.0" >&2
    exit 1
fi
mapfile -t imports < <(sed -n 's/^ *import \([^;]*\);$/\1/p' "$work/tool.wit")
unexpected=()
for i in "${imports[@]}"; do
    case "$i" in
        wasi:cli/* | wasi:io/* | wasi:clocks/* | wasi:random/* | wasi:filesystem/* | \
            toolhost:tool/types@* | toolhost:tool/context@*) ;;
        *) unexpected+=("$i") ;;
    esac
done
if ((${#unexpected[@]})); then
    echo "build.sh: the component imports what a read-only policy does not grant: ${unexpected[*]}" >&2
    exit 1
fi

th_install "$work/tool.wasm" "$out" "$digest" "${#imports[@]} imports, all granted under a read-only policy"
