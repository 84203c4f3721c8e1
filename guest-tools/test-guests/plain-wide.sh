#!/usr/bin/env bash
# Writes a plain component with many exported functions, for the load
# benchmark (host/cli/benches/plain.rs):
#
#   guest-tools/test-guests/plain-wide.sh OUTPUT.wasm [FUNCTIONS]
#
# FUNCTIONS (default 50) functions over records, variants, enums, flags,
# lists, options and results, half in an exported interface and half at
# the world's top level, each with doc comments, in a component whose
# every function traps (`wasm-tools component embed --dummy`): loading it
# (compiling, reading its type, writing its tools' schemas and
# descriptions) is what is measured, never a call. Its docs are injected
# as a published component carries them (inject-docs.py). Needs the
# Python kit's pinned wasm-tools (its venv; installed when missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: plain-wide.sh OUTPUT.wasm [FUNCTIONS]}"
n="${2:-50}"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"
venv="${TOOLHOST_PY_VENV:-$root/target/python-guests/venv}"
th_python_kit_venv "$venv" plain-wide.sh
wasm_tools="$venv/bin/wasm-tools"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/wit"
{
    echo "/// A wide plain component: many functions, for the load benchmark."
    echo "package toolhost-bench:wide@0.1.0;"
    echo
    echo "/// Half of the functions."
    echo "interface ops {"
    echo "    /// An entry."
    echo "    record entry {"
    echo "        /// Its name."
    echo "        name: string,"
    echo "        /// Its size in bytes."
    echo "        size: u64,"
    echo "        /// Its tags."
    echo "        tags: list<string>,"
    echo "        /// Its parent, if any."
    echo "        parent: option<string>,"
    echo "    }"
    echo "    /// A kind."
    echo "    enum kind { file, directory, link }"
    echo "    /// Permissions."
    echo "    flags mode { read, write, exec }"
    echo "    /// A change."
    echo "    variant change { added(entry), removed(string), renamed(tuple<string, string>), none }"
    echo "    /// Why it failed."
    echo "    variant failure { not-found(string), denied, io(string) }"
    for ((i = 0; i < n / 2; i++)); do
        echo "    /// Operation $i: looks entries up by kind and mode, and says what changed."
        echo "    op-$i: func(path: string, kind: kind, mode: mode, limit: option<u32>, entries: list<entry>) -> result<list<change>, failure>;"
    done
    echo "}"
    echo
    echo "/// The wide world."
    echo "world wide {"
    for ((i = 0; i < n - n / 2; i++)); do
        echo "    /// Top-level function $i: sums and reports."
        echo "    export top-$i: func(values: list<s64>, label: string, scale: f64) -> tuple<s64, string, option<f64>>;"
    done
    echo "    export ops;"
    echo "}"
} >"$work/wit/wide.wit"
"$wasm_tools" component embed --dummy "$work/wit" -w wide -o "$work/core.wasm"
"$wasm_tools" component new "$work/core.wasm" -o "$work/raw.wasm"
"$wasm_tools" component wit "$work/wit" --wasm -o "$work/docs.wasm"
mkdir -p "$(dirname "$out")"
python3 "$here/inject-docs.py" "$work/docs.wasm" "$work/raw.wasm" "$out"
"$wasm_tools" validate "$out"
echo "plain-wide.sh: $out ($n functions, $(wc -c <"$out") bytes)" >&2
