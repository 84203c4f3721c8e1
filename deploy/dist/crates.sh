#!/usr/bin/env bash
# Packages every publishable crate of the workspace with `cargo package`,
# so that `cargo install toolhost` builds from the packaged crates alone.
#
#   deploy/dist/crates.sh [--quick] [--out DIR]
#
# 1. Writes host/guests/guest-sources.tar: the tracked files of
#    guest-tools/, wit/, policies/ and .cargo/config.toml (sorted, fixed
#    owners and times). toolhost-guests' build script builds the built-ins
#    from it when there is no repository around the crate, and the CLI
#    embeds its kits from there; cargo itself would leave every guest
#    crate out of a package (a directory with a Cargo.toml is another
#    package).
# 2. `cargo package --workspace` (all but the unpublished toolhost-tests
#    and toolhost-testkit),
#    which resolves the crates' dependencies on each other through a local
#    registry of the packages just made and verifies each one by building
#    it from its package: the built-ins from the tarball, in OUT_DIR.
#    --quick (make test): every crate packaged without verification
#    (verifying each one builds wasmtime again for its own feature set,
#    some ten times: about 15 minutes), then toolhost-guests alone verified:
#    the built-ins built from its tarball and nothing else.
# 3. Copies the .crate files to DIR (default target/dist/crates), with
#    SHA256SUMS.
#
# Environment: CARGO (default cargo), CARGO_TARGET_DIR (where the
# verification builds go; default target/).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/dist/crates"
quick=
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --out) out="$2"; shift ;;
        *) echo "crates.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
cd "$root"

tar_file="host/guests/guest-sources.tar"
git ls-files -z -- guest-tools wit policies .cargo/config.toml |
    tar --null -T - --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$tar_file.partial"
mv "$tar_file.partial" "$tar_file"
echo "crates.sh: $tar_file ($(tar -tf "$tar_file" | wc -l) files, $(($(wc -c <"$tar_file") / 1024)) KiB)" >&2

# --allow-dirty: the tarball is generated, never committed.
if [[ -n "$quick" ]]; then
    "${CARGO:-cargo}" package --workspace --exclude toolhost-tests --exclude toolhost-testkit --allow-dirty --locked --no-verify
    "${CARGO:-cargo}" package -p toolhost-guests --allow-dirty --locked
else
    "${CARGO:-cargo}" package --workspace --exclude toolhost-tests --exclude toolhost-testkit --allow-dirty --locked
fi

target="${CARGO_TARGET_DIR:-$root/target}"
rm -rf "$out"
mkdir -p "$out"
cp "$target"/package/*.crate "$out"/
(cd "$out" && sha256sum -- *.crate >SHA256SUMS)
echo "crates.sh: $(ls "$out"/*.crate | wc -l) crates in $out" >&2
