#!/usr/bin/env bash
# Installs the real parts host/cli/tests/team.rs and benches/team.rs start:
#
#   haproxy        the load balancer in front of the replicas (Debian)
#   promtool       (Debian's prometheus package) checks /metrics' format
#   oidc-provider  a certified OpenID / OAuth authorization server (npm),
#                  pinned in package-lock.json, into ${TOOLHOST_TEAM_DIR:-target/team}
#   kubernetes-validate  checks deploy/kubernetes against the Kubernetes
#                  schemas (PyPI, pinned in requirements.txt, a venv there)
#
# Debian packages come from apt (as root, or with passwordless sudo); the npm
# packages with `npm ci`, the Python ones with pip. Idempotent: what is there
# is not installed again.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLHOST_TEAM_DIR:-$root/target/team}"

say() { printf 'toolhost team tests: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
# shellcheck source=../lib/apt.sh
source "$root/tests/lib/apt.sh"
# shellcheck source=../lib/install.sh
source "$root/tests/lib/install.sh"

install_lock "$dest"

need=()
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || need+=(haproxy)
command -v promtool >/dev/null || need+=(prometheus)
if ((${#need[@]})); then
    say "installing ${need[*]} (apt)"
    apt_install "$root/target/team-apt.log" "${need[@]}"
fi
stamp="$(cat "$here/package.json" "$here/package-lock.json" "$here/requirements.txt" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "installing oidc-provider (npm ci) and kubernetes-validate (pip) into $dest"
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
    python3 -m venv "$dest/venv"
    "$dest/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
    echo "$stamp" >"$dest/.stamp"
fi
