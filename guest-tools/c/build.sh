#!/usr/bin/env bash
# Builds a C tool component for toolhost.
#
#   guest-tools/c/build.sh [OUTPUT.wasm] [TOOL]
#
# OUTPUT defaults to target/c-guests/tool_<TOOL>.wasm, TOOL to `hash` (the
# directory tools/<TOOL>/: every *.c there, tests/ excluded).
#
# 1. Checks the Debian packages of the toolchain (toolchain.sh: clang-19,
#    lld-19, wasi-libc, libclang-rt-19-dev-wasm32, shared with the code
#    runner) and installs the pinned versions with apt-get when one is
#    missing (as root; otherwise it says what to install and stops).
# 2. Builds the builder (guest-tools/builder/, a standalone cargo project,
#    pinned by its Cargo.lock, shared with the Go kit) into
#    target/guest-builder: wit-bindgen-c, wit-component
#    and wasmtime 48's WASI preview 1 reactor adapter in one small binary.
# 3. Generates the C bindings of wit/world.wit (the contract's
#    tool-provider world, toolhost:tool@0.3.0 from wit/v0.3.0: exports
#    `tool`, imports `context`; plus wasi:cli/environment, for
#    initial-cwd).
# 4. Compiles the kit, the tool and the bindings for wasm32-wasi (preview
#    1, as a reactor) with clang-19, with the flags pinned below, and links
#    the bindings' component-type object in.
# 5. Wraps the core module into a component with the reactor adapter
#    (validated), and checks that it imports no wasi:sockets interface and
#    exports toolhost:tool/tool@0.3.0.
#
# Nothing is rebuilt when the sources are unchanged since the last build
# (their digest, with the compiler's version, is kept beside the output, in
# OUTPUT.sources). The build is deterministic: the same sources and
# toolchain give the same bytes.
#
# Environment: TOOLHOST_C_REBUILD=1 (build even when up to date),
# TOOLHOST_BUILDER_JOBS (cargo -j for the builder; default: every core).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tool="${2:-hash}"
out="${1:-$root/target/c-guests/tool_$tool.wasm}"
tool_dir="$here/tools/$tool"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ── the pinned toolchain (Debian 12 "bookworm"): toolchain.sh ─────────
# shellcheck source=toolchain.sh
source "$here/toolchain.sh"
cc=clang-19
# wasm32-wasi: Debian's wasi-libc (2022) ships only that triple's sysroot
# (/usr/lib/wasm32-wasi), not wasm32-wasip1 or wasip2. A reactor: no
# main, _initialize runs the constructors (wit-component calls it).
cflags=(
    --target=wasm32-wasi
    -std=c11 -O2 -fno-common
    -ffile-prefix-map="$root/"= -ffile-prefix-map="$work/"=
)
# For the kit and the tools; the generated bindings get only -Wall (their
# nested loops shadow variables).
warnings=(-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter)
# --strip-debug drops the DWARF that Debian's libc.a carries (~190 KB) and
# keeps the `name` section (function names in trap backtraces) and the
# component-type section.
ldflags=(-mexec-model=reactor -Wl,--strip-debug)

if [[ ! -d "$tool_dir" ]] || ! compgen -G "$tool_dir/*.c" >/dev/null; then
    echo "build.sh: no tool '$tool' ($tool_dir/*.c is missing)" >&2
    exit 2
fi

# ── 1. the toolchain ───────────────────────────────────────────────────
th_c_toolchain build.sh

# ── 0. up to date? ─────────────────────────────────────────────────────
# What the component is built from: the tool, the kit, the WIT (the
# contract and wit/ here), the builder, this script, and the compiler.
sources_digest() {
    {
        find "$tool_dir" "$here/kit" "$here/wit" "$root/wit/v0.3.0" \
            "$here/../builder/Cargo.toml" "$here/../builder/Cargo.lock" "$here/../builder/src" \
            "$here/build.sh" "$here/toolchain.sh" "$here/../build-lib.sh" -type f ! -path '*/tests/*' -print0 | th_files_digest
        "$cc" --version | head -1
        dpkg-query -W -f='${Version}\n' wasi-libc
    } | th_digest
}
digest="$(sources_digest)"
th_up_to_date "$out" "$digest" TOOLHOST_C_REBUILD && exit 0

# ── 2. the builder ─────────────────────────────────────────────────────
builder="$(bash "$here/../builder/build.sh")"

# ── 3. bindings ────────────────────────────────────────────────────────
# The contract first, then the world here that includes it.
"$builder" bindings "$root/wit/v0.3.0:$here/wit" toolhost:c-guest/tool-provider "$work/bindings" 2>/dev/null

# ── 4. compile and link ────────────────────────────────────────────────
mapfile -t tool_sources < <(find "$tool_dir" -maxdepth 1 -name '*.c' | LC_ALL=C sort)
objects=()
for src in "$here/kit/th_json.c" "$here/kit/toolhost_kit.c" "$here/kit/component.c" "${tool_sources[@]}"; do
    obj="$work/obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o"
    mkdir -p "$work/obj"
    "$cc" "${cflags[@]}" "${warnings[@]}" -I"$here/kit" -I"$tool_dir" -I"$work/bindings" -c "$src" -o "$obj"
    objects+=("$obj")
done
"$cc" "${cflags[@]}" -Wall -I"$work/bindings" -c "$work/bindings/tool_provider.c" -o "$work/obj/bindings.o"
"$cc" "${cflags[@]}" "${objects[@]}" "$work/obj/bindings.o" \
    "$work/bindings/tool_provider_component_type.o" "${ldflags[@]}" -o "$work/core.wasm"

# ── 5. componentize ────────────────────────────────────────────────────
"$builder" componentize --forbid-import wasi:sockets/ "$work/core.wasm" "$work/tool.wasm"
# (The builder's own line above gives the number of imports.)
if ! "$builder" wit "$work/tool.wasm" | grep -qx 'export toolhost:tool/tool@0\.3\.0'; then
    echo "build.sh: the component does not export toolhost:tool/tool@0.3.0" >&2
    exit 1
fi
th_install "$work/tool.wasm" "$out" "$digest" "no wasi:sockets import"
