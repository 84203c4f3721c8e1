# Sourced by the install scripts of the tests' real parts:
# `apt_install LOG PACKAGE…` installs Debian packages (as root, or with
# passwordless sudo), quietly, printing apt's log only when it fails.
# Needs `die` from the caller.

apt_install() {
    local log="$1"
    shift
    local as_root
    if [[ "$(id -u)" == 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        die "needs the Debian packages $* (apt-get install $*), and cannot install them without root"
    fi
    mkdir -p "$(dirname "$log")"
    if ! { "${as_root[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${as_root[@]}" \
        apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
        cat "$log" >&2
        die "apt-get install $* failed"
    fi
}
