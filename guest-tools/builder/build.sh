#!/usr/bin/env bash
# Builds toolhost-guest-builder (this directory; pinned by Cargo.lock) into
# target/guest-builder and prints the binary's path. The C and Go build
# scripts call it; cargo makes it a no-op when nothing changed.
#
#   builder="$(bash guest-tools/builder/build.sh)"
#
# Environment: TOOLHOST_BUILDER_JOBS (cargo -j; default: every core),
# TOOLHOST_BUILDER_TARGET (its target directory; default
# target/guest-builder; `toolhost build` keeps it in its cache, shared by
# every version of the kits). CARGO_TARGET_DIR is not read.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${TOOLHOST_BUILDER_TARGET:-$root/target/guest-builder}"
CARGO_TARGET_DIR="$target" cargo build --quiet --release --locked \
    ${TOOLHOST_BUILDER_JOBS:+-j "$TOOLHOST_BUILDER_JOBS"} --manifest-path "$here/Cargo.toml" >&2
echo "$target/release/toolhost-guest-builder"
