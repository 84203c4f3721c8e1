#!/usr/bin/env bash
# Installs the pinned npm packages build.sh and test.sh use, isolated from
# the source tree:
#
#   guest-tools/js/install.sh
#
# into ${TOOLHOST_JS_NODE:-target/js-guests/node}: package.json and
# package-lock.json are copied there and installed with `npm ci` (exactly
# the locked tree; no install scripts run). About 340 MB, mostly the
# StarlingMonkey engine builds in componentize-js and jco's toolchain.
#
# Idempotent: a stamp records the sha256 of the two files and the node
# version; when it matches, nothing is done. Needs node 20 or later with npm;
# reaches only the npm registry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_JS_NODE:-$root/target/js-guests/node}"

say() { printf 'js install: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v node >/dev/null || die "node (20 or later) is needed"
command -v npm >/dev/null || die "npm is needed"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    die "node is $(node --version); 20 or later is needed"

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

# One installer at a time (a build and a test run may start together).
if command -v flock >/dev/null; then
    exec 9>"$dest/.install.lock"
    flock 9
fi

stamp_file="$dest/.stamp"
stamp="$(
    {
        sha256sum "$here/package.json" "$here/package-lock.json" | cut -d' ' -f1
        node --version
    } | sha256sum | cut -d' ' -f1
)"
if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" &&
    -f "$dest/node_modules/@bytecodealliance/componentize-js/package.json" ]]; then
    exit 0
fi
rm -f "$stamp_file"

say "installing package-lock.json into $dest (node $(node --version), npm $(npm --version))"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
log="$dest/install.log"
if ! npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    cat "$log" >&2
    die "npm ci failed"
fi
echo "$stamp" >"$stamp_file"
say "done"
