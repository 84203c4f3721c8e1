#!/usr/bin/env bash
# Installs the real parts host/cli/tests/registry.rs starts and drives:
#
#   docker-registry   Debian's CNCF distribution registry (2.8), started on
#                     loopback ports by the tests (one with htpasswd auth)
#   skopeo            a publisher nobody here wrote (`skopeo copy oci:DIR …`)
#   htpasswd          (apache2-utils) the credentials of the auth registry
#   the signer        @sigstore/sign, @sigstore/mock and @sigstore/oci, pinned
#                     in package-lock.json, into ${TOOLHOST_SIGNER_DIR:-target/registry-signer}
#
# Debian packages come from apt (as root, or with passwordless sudo); the npm
# packages with `npm ci`. Idempotent: what is there is not installed again.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_SIGNER_DIR:-$root/target/registry-signer}"

say() { printf 'toolhost registry tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
# shellcheck source=../lib/apt.sh
source "$root/tests/lib/apt.sh"
# shellcheck source=../lib/install.sh
source "$root/tests/lib/install.sh"

need=()
command -v docker-registry >/dev/null || need+=(docker-registry)
command -v skopeo >/dev/null || need+=(skopeo)
command -v htpasswd >/dev/null || need+=(apache2-utils)
if ((${#need[@]})); then
    say "installing ${need[*]} (apt)"
    apt_install "$root/target/registry-apt.log" "${need[@]}"
fi

install_lock "$dest"
stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "installing the Sigstore signer (npm ci) into $dest"
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$stamp" >"$dest/.stamp"
fi
