#!/usr/bin/env bash
# Builds a plain test component (wit/test-plain, world `plain`: ordinary
# exported functions, no toolhost:tool) and gives it the WIT docs a
# published component carries:
#
#   guest-tools/test-guests/plain-build.sh LANG OUTPUT.wasm [COMPONENT.wasm]
#
# LANG is one of
#   rust    COMPONENT is the component host/guests built from plain/
#           (wit-bindgen, with the rest of guest-tools);
#   js      plain-js/app.js, with the JavaScript kit's pinned componentize-js
#           (guest-tools/js/install.sh);
#   python  plain-py/, with the Python kit's pinned componentize-py (its
#           venv, guest-tools/python/requirements.txt).
#
# Docs: the toolchains drop the WIT's doc comments. Wassette's builds put
# them back as a top-level `package-docs` custom section (the format
# wit-component writes); this does the same with the pinned wasm-tools: it
# encodes wit/test-plain as a binary WIT package, which carries that
# section, and appends the section to the component.
#
# Nothing is rebuilt when the sources are unchanged since the last build
# (their digest is kept beside the output, in OUTPUT.sources).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"
lang="${1:?usage: plain-build.sh rust|js|python OUTPUT.wasm [COMPONENT.wasm]}"
out="${2:?usage: plain-build.sh rust|js|python OUTPUT.wasm [COMPONENT.wasm]}"
wit="$root/wit/test-plain"
venv="${TOOLHOST_PY_VENV:-$root/target/python-guests/venv}"

case "$lang" in
    rust) inputs=("${3:?rust needs the built component}") ;;
    js) inputs=("$here/plain-js" "$root/guest-tools/js/package.json" "$root/guest-tools/js/package-lock.json") ;;
    python) inputs=("$here/plain-py" "$root/guest-tools/python/requirements.txt") ;;
    *) echo "plain-build.sh: unknown language '$lang' (rust, js or python)" >&2; exit 2 ;;
esac

digest="$(
    find -L "${inputs[@]}" "$wit" "$here/plain-build.sh" "$here/inject-docs.py" "$here/../build-lib.sh" -type f \
        ! -path '*/__pycache__/*' -print0 | th_files_digest | th_digest
)"
th_up_to_date "$out" "$digest" TOOLHOST_PLAIN_REBUILD && exit 0

# wasm-tools (and componentize-py), from the Python kit's pinned venv.
th_python_kit_venv "$venv" plain-build.sh
wasm_tools="$venv/bin/wasm-tools"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

case "$lang" in
    rust)
        cp "$3" "$work/raw.wasm"
        ;;
    js)
        node_dir="${TOOLHOST_JS_NODE:-$root/target/js-guests/node}"
        TOOLHOST_JS_NODE="$node_dir" "$root/guest-tools/js/install.sh"
        cp "$here/plain-js/app.js" "$work/app.js"
        (
            cd "$work"
            node "$node_dir/node_modules/@bytecodealliance/componentize-js/src/cli.js" app.js \
                --wit "$wit" --world-name plain --disable http fetch-event -o "$work/raw.wasm"
        )
        ;;
    python)
        mkdir "$work/src"
        cp "$here/plain-py/"*.py "$work/src/"
        "$venv/bin/componentize-py" --quiet -d "$wit" -w plain \
            componentize app -p "$work/src" -o "$work/raw.wasm"
        ;;
esac

# The docs section, out of the WIT encoded as a binary package, appended
# to the component as a top-level custom section.
"$wasm_tools" component wit "$wit" --wasm -o "$work/docs.wasm"
python3 "$here/inject-docs.py" "$work/docs.wasm" "$work/raw.wasm" "$work/plain.wasm"
"$wasm_tools" validate "$work/plain.wasm"
th_install "$work/plain.wasm" "$out" "$digest" "$lang, with its WIT docs"
