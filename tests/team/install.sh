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

need=()
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || need+=(haproxy)
command -v promtool >/dev/null || need+=(prometheus)
if ((${#need[@]})); then
    if [[ "$(id -u)" == 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        die "needs the Debian packages ${need[*]} (apt-get install ${need[*]}), and cannot install them without root"
    fi
    say "installing ${need[*]} (apt)"
    mkdir -p "$root/target"
    log="$root/target/team-apt.log"
    if ! { "${as_root[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${as_root[@]}" \
        apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
        cat "$log" >&2
        die "apt-get install ${need[*]} failed"
    fi
    # The package starts a Prometheus server: the tests only need promtool.
    if [[ " ${need[*]} " == *" prometheus "* ]]; then
        "${as_root[@]}" systemctl stop prometheus prometheus-node-exporter >/dev/null 2>&1 || true
    fi
fi

# One installer at a time (test binaries may run this together).
mkdir -p "$dest"
if command -v flock >/dev/null; then
    exec 9>"$dest/.install.lock"
    flock 9
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
