#!/usr/bin/env bash
# Builds a code runner, an interpreter behind code mode's `run_code`, for
# wasm32-wasip2: JavaScript (QuickJS-NG, which is C) or Python (Monty,
# pure Rust), one component each from this one crate:
#
#   guest-tools/code/build.sh [OUTPUT.wasm] [javascript|python]
#
# OUTPUT defaults to guest-tools/code/target/tool_code.wasm (the language to
# javascript). The host's build (host/guests/build.rs) runs this script for
# both and embeds the components as the `code` and `code_python` built-ins;
# run it by hand to build one component alone.
#
# 1. Checks the C kit's pinned toolchain (guest-tools/c/toolchain.sh:
#    clang-19, wasi-libc, libclang for bindgen, llvm-ar) and installs what
#    is missing with apt-get (as root; otherwise it says what to install).
# 2. Lays out that toolchain the way rquickjs's build expects a WASI SDK
#    (`$WASI_SDK/bin/clang`, `bin/ar`, `share/wasi-sysroot`), in this
#    crate's target directory: rquickjs would otherwise download one, and
#    nothing outside the registries is reachable. The compiler wrapper maps
#    the checkout and cargo's home out of the objects (reproducible bytes).
# 3. Runs cargo (release, --locked) for wasm32-wasip2 with the language's
#    feature alone, each language in a target directory of its own (their
#    features differ, so one would rebuild the other's crate), and copies
#    the component to OUTPUT.
#
# Cargo decides what is up to date. Environment: TOOLHOST_CODE_JOBS (cargo
# -j; default: every core).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/target/tool_code.wasm}"
language="${2:-javascript}"
target=wasm32-wasip2
case "$language" in
    javascript) target_dir="$here/target" ;;
    python) target_dir="$here/target/python" ;;
    *)
        echo "code/build.sh: the language is javascript or python, not '$language'" >&2
        exit 2
        ;;
esac

# ── 1. the toolchain ───────────────────────────────────────────────────
# shellcheck source=../c/toolchain.sh
source "$here/../c/toolchain.sh"
th_c_toolchain code/build.sh

# ── 2. the toolchain as a WASI SDK ─────────────────────────────────────
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
sdk="$here/target/wasi-sdk"
mkdir -p "$sdk/bin" "$sdk/share/wasi-sysroot/include" "$sdk/share/wasi-sysroot/lib"
cat >"$sdk/bin/clang.new" <<WRAPPER
#!/bin/sh
# clang-19 for wasm32, with the checkout and cargo's home mapped out of
# what it compiles (file names end up in assertion messages).
exec clang-19 -ffile-prefix-map="$root/"=/toolhost/ -ffile-prefix-map="$cargo_home/"=/cargo/ "\$@"
WRAPPER
printf '#!/bin/sh\nexec llvm-ar-19 "$@"\n' >"$sdk/bin/ar.new"
chmod +x "$sdk/bin/clang.new" "$sdk/bin/ar.new"
# Rewritten only when they change, so cargo sees the same compiler.
for f in clang ar; do
    if cmp -s "$sdk/bin/$f.new" "$sdk/bin/$f"; then
        rm "$sdk/bin/$f.new"
    else
        mv "$sdk/bin/$f.new" "$sdk/bin/$f"
    fi
done
# Debian's wasi-libc is the wasm32-wasi (preview 1) sysroot; QuickJS only
# needs its headers and libc's ABI, which wasip2 shares (Rust's own
# wasip2 libc is what the component links).
for triple in wasm32-wasip2 wasm32-wasi; do
    ln -sfn /usr/include/wasm32-wasi "$sdk/share/wasi-sysroot/include/$triple"
    ln -sfn /usr/lib/wasm32-wasi "$sdk/share/wasi-sysroot/lib/$triple"
done

# ── 3. the component ───────────────────────────────────────────────────
rustup target list --installed 2>/dev/null | grep -qx "$target" || rustup target add "$target" >&2
remaps="--remap-path-prefix=$root=/toolhost --remap-path-prefix=$cargo_home=/cargo"
flags=()
[[ -n "${TOOLHOST_CODE_JOBS:-}" ]] && flags+=(-j "$TOOLHOST_CODE_JOBS")
WASI_SDK="$sdk" LIBCLANG_PATH=/usr/lib/llvm-19/lib \
    CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="$remaps" \
    cargo build --release --locked --target "$target" \
    --no-default-features --features "$language" \
    --manifest-path "$here/Cargo.toml" --target-dir "$target_dir" "${flags[@]}" >&2
built="$target_dir/$target/release/tool_code.wasm"
if [[ "$built" != "$out" ]]; then
    mkdir -p "$(dirname "$out")"
    cp "$built" "$out.partial"
    mv -f "$out.partial" "$out"
fi
echo "code/build.sh: $out ($(wc -c <"$out") bytes)" >&2
echo "$out"
