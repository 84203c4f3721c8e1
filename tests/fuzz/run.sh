#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer's coverage instrumentation and runs
# each for SECONDS (default 20), as many side by side as there are
# processors.
#
#   tests/fuzz/run.sh [--smoke] [SECONDS] [TARGET...]
#       targets: policy policy_import session_log toolbox arguments mcp_request channel
#           worker_answer
#   tests/fuzz/run.sh [--smoke] --build-only
#       builds the targets and stops (make test starts the smoke's build
#       early, in the background, and its run later finds it done)
#
# --smoke (what `make test` runs, 15 s each) builds with the `smoke` profile
# (opt-level 1, no debug info): a quarter less build time on a fresh clone
# (185 s against 242 s on 2 cores) for about four fifths of the executions
# per second, which a 15-second run does not miss. `make fuzz` builds the
# release profile (opt-level 3, line tables) for its long runs.
#
# Stable rustc: the flags are the ones cargo-fuzz passes without a
# sanitizer (-Cpasses=sancov-module and the -sanitizer-coverage-* LLVM
# options, --cfg fuzzing), for the target triple only, so build scripts and
# proc-macros are not instrumented. Debug assertions and overflow checks
# are on. Each target starts from the repository's corpora (read, never
# written): the hand-written cases in tests/corpus/<target>/ and what long
# runs found, minimized, in tests/fuzz/corpus/<target>/; plus what earlier
# runs here found, in target/fuzz/corpus/<target>/. A crash is written to
# target/fuzz/artifacts/<target>/ and fails the run. Limits per input: 10 s
# (a hang), 2 GiB RSS (unbounded allocation), 1 MiB of input.
#
# To keep what a long run found (a set cover of its features, inputs of at
# most 1 KiB), after `make fuzz`:
#   target/fuzz/x86_64-unknown-linux-gnu/release/<target> -set_cover_merge=1 \
#       -max_len=1024 tests/fuzz/corpus/<target> target/fuzz/corpus/<target>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
profile=release
if [[ "${1:-}" == --smoke ]]; then
    profile=smoke
    shift
fi
build_only=0
if [[ "${1:-}" == --build-only ]]; then
    build_only=1
    shift
fi
seconds="${1:-20}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(policy policy_import session_log toolbox arguments mcp_request channel worker_answer)

triple="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-sanitizer-coverage-stack-depth \
--cfg fuzzing"
export CARGO_TARGET_DIR="$root/target/fuzz"
build=(cargo build --quiet --profile "$profile" --locked --target "$triple" --manifest-path "$here/Cargo.toml")
if ((build_only)); then
    # The build in a process group of its own (job control, in this
    # session), so that a TERM to this script stops cargo and every rustc
    # it started. (setsid would start a session, and with it a scheduler
    # autogroup of its own, where nice has no effect against the caller's.)
    set -m
    "${build[@]}" &
    pid=$!
    trap 'kill -TERM -- "-$pid" 2>/dev/null; exit 143' TERM INT
    wait "$pid"
    exit
fi
"${build[@]}"

# One target's run, its report in target/fuzz/logs/<target>.log.
fuzz() {
    local t="$1"
    local found="$root/target/fuzz/corpus/$t" artifacts="$root/target/fuzz/artifacts/$t"
    mkdir -p "$found" "$artifacts"
    local corpora=("$found")
    for c in "$here/corpus/$t" "$root/tests/corpus/$t"; do
        [[ -d "$c" ]] && corpora+=("$c")
    done
    local bin="$CARGO_TARGET_DIR/$triple/$profile/$t" a
    # What an earlier run here found and the code since fixed is dropped:
    # a failing input stays until it passes.
    for a in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
        [[ -f "$a" ]] && "$bin" -timeout=10 -rss_limit_mb=2048 "$a" >/dev/null 2>&1 && rm -f "$a"
    done
    {
        echo "== fuzz $t for ${seconds}s"
        "$bin" \
            -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 \
            -print_final_stats=1 -artifact_prefix="$artifacts/" \
            "${corpora[@]}" 2>&1 |
            awk '/panicked/ { tail = 4 }
                 /^(stat::number_of_executed_units|stat::peak_rss_mb|Done|INFO: seed corpus)|ERROR|SUMMARY|^==/ || tail-- > 0' || true
    } >"$logs/$t.log"
}

# The targets run side by side, one per processor (each is one thread), and
# report in order once all have run.
logs="$root/target/fuzz/logs"
mkdir -p "$logs"
width="$(nproc 2>/dev/null || echo 1)"
running=0
for t in "${targets[@]}"; do
    if ((running >= width)); then
        wait -n
        running=$((running - 1))
    fi
    fuzz "$t" &
    running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
    cat "$logs/$t.log" >&2
    artifacts="$root/target/fuzz/artifacts/$t"
    if compgen -G "$artifacts/crash-*" >/dev/null || compgen -G "$artifacts/timeout-*" >/dev/null ||
        compgen -G "$artifacts/oom-*" >/dev/null; then
        echo "run.sh: $t found a failing input: $(ls "$artifacts")" >&2
        failed=1
    fi
done
exit "$failed"
