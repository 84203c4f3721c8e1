#!/usr/bin/env bash
# Runs the native unit tests of the C kit and of every C tool.
#
#   guest-tools/c/test.sh
#
# Compiles kit/tests/*.c and tools/<name>/tests/*.c with the host's C
# compiler (${CC:-cc}: gcc or clang) under AddressSanitizer and
# UndefinedBehaviorSanitizer (TOOLHOST_C_SANITIZE=0 turns them off), with
# the kit and the tool's sources (kit/native.c instead of the component
# glue), and runs each in a scratch directory (its working directory plays
# /workspace). Before the hash tests it writes files there and a manifest
# of their digests computed independently: sha256sum (coreutils) for
# sha256, Python's hashlib.blake2s and zlib.crc32 for the others, for
# whole files and byte ranges. No component is built: the tests call the
# same dispatch the component runs (th_execute/th_render); the final word
# is a call through the host (README.md).
#
# Prints each test binary's "N passed, N failed" and a total line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cc="${CC:-cc}"
python="${PYTHON:-python3}"
flags=(-std=c11 -O1 -g -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-unused-function)
if [[ "${TOOLHOST_C_SANITIZE:-1}" != 0 ]]; then
    flags+=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

kit_sources=("$here/kit/th_json.c" "$here/kit/toolhost_kit.c" "$here/kit/native.c")
passed=0 failed=0 status=0

run() { # label, binary, directory to run in
    echo "== $1" >&2
    local log="$work/$1.log"
    if (cd "$3" && "$2") >"$log"; then :; else status=1; fi
    cat "$log"
    local line
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1 || true)"
    if [[ -z "$line" ]]; then
        echo "$1: no summary (crashed?)" >&2
        failed=$((failed + 1)) status=1
        return
    fi
    passed=$((passed + ${line%% passed*}))
    local f="${line#*, }"
    failed=$((failed + ${f%% failed}))
}

# ── the kit ────────────────────────────────────────────────────────────
mkdir -p "$work/kit"
"$cc" "${flags[@]}" -I"$here/kit" "${kit_sources[@]}" "$here"/kit/tests/*.c -lm -o "$work/test_kit"
run kit "$work/test_kit" "$work/kit"

# ── the hash tool's scratch directory ──────────────────────────────────
prepare_hash() { # directory
    local d="$1"
    mkdir -p "$d/tree/sub/deep" "$d/tree/a" "$d/tree/.hidden"
    printf 'hello\n' >"$d/tree/a.txt"
    printf 'x' >"$d/tree/sub/b.c"
    printf 'yy' >"$d/tree/sub/deep/c.c"
    printf 'a-b' >"$d/tree/a-b.txt"
    printf 'int a;\n' >"$d/tree/a.c"
    printf 'z' >"$d/tree/a/z.c"
    printf 'b' >"$d/tree/back\\slash.txt"
    printf 'h' >"$d/tree/.hidden/h.txt"
    printf 'd' >"$d/tree/.dot.txt"
    ln -s a.txt "$d/tree/link.txt"
    # Sizes around SHA-256/BLAKE2s blocks (64 bytes) and the tool's read
    # buffer (64 KiB), and one of 3 MiB + 3.
    local sizes=(0 1 55 56 63 64 65 127 128 129 65535 65536 65537 3145731)
    for n in "${sizes[@]}"; do
        head -c "$n" /dev/urandom >"$d/f$n.bin"
    done
    (
        cd "$d"
        for n in "${sizes[@]}"; do
            echo "sha256 $(sha256sum "f$n.bin" | cut -d' ' -f1) f$n.bin"
        done
        # byte ranges through tail/head for sha256
        for r in "1 10" "63 65537" "65535 2" "100000 3000000" "3145730 100"; do
            set -- $r
            echo "sha256 $(tail -c +$(($1 + 1)) f3145731.bin | head -c "$2" | sha256sum | cut -d' ' -f1) f3145731.bin $1 $2"
        done
        "$python" - "${sizes[@]}" <<'PY'
import hashlib, sys, zlib
for n in sys.argv[1:]:
    data = open(f"f{n}.bin", "rb").read()
    print(f"blake2s {hashlib.blake2s(data).hexdigest()} f{n}.bin")
    print(f"crc32 {zlib.crc32(data):08x} f{n}.bin")
big = open("f3145731.bin", "rb").read()
for off, length in [(0, 65536), (7, 131072), (3145000, 5000)]:
    part = big[off:off + length]
    print(f"blake2s {hashlib.blake2s(part).hexdigest()} f3145731.bin {off} {length}")
    print(f"crc32 {zlib.crc32(part):08x} f3145731.bin {off} {length}")
PY
    ) >"$d/expected.txt"
}

# ── every tool ─────────────────────────────────────────────────────────
for dir in "$here"/tools/*/; do
    tool="$(basename "$dir")"
    compgen -G "$dir/tests/*.c" >/dev/null || continue
    mkdir -p "$work/tool-$tool"
    if [[ "$(type -t "prepare_$tool")" == function ]]; then "prepare_$tool" "$work/tool-$tool"; fi
    mapfile -t sources < <(find "$dir" -maxdepth 1 -name '*.c' | LC_ALL=C sort)
    "$cc" "${flags[@]}" -I"$here/kit" -I"$dir" "${kit_sources[@]}" "${sources[@]}" "$dir"/tests/*.c \
        -lm -o "$work/test_$tool"
    run "tool-$tool" "$work/test_$tool" "$work/tool-$tool"
done

echo "all: $passed passed, $failed failed"
exit "$status"
