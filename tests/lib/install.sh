# Sourced by the install scripts of the tests' pinned parts: what each of
# them does around its own installs. Needs `say` and `die` from the caller.

# install_lock DIR: makes DIR and holds its install lock until the script
# ends, so one installer runs at a time (test binaries and parallel test
# runs share DIR).
install_lock() {
    mkdir -p "$1"
    if command -v flock >/dev/null; then
        exec 9>"$1/.install.lock"
        flock 9
    fi
}

# need_python_node PYTHON: dies unless PYTHON, node and npm are there.
need_python_node() {
    command -v "$1" >/dev/null || die "python3 is needed (Debian: apt-get install python3 python3-venv)"
    command -v node >/dev/null || die "node (20 or later) is needed"
    command -v npm >/dev/null || die "npm is needed"
}

# pins_stamp PYTHON FILE...: a digest of the pinned FILEs and of the
# interpreters that install them (PYTHON's and node's versions): what an
# install is up to date with.
pins_stamp() {
    local python="$1"
    shift
    {
        sha256sum "$@" | cut -d' ' -f1
        "$python" -c 'import sys; print(sys.version)'
        node --version
    } | sha256sum | cut -d' ' -f1
}

# run LOG CMD...: runs CMD with its output in LOG; shows LOG if it fails.
run() {
    local log="$1"
    shift
    if ! "$@" >>"$log" 2>&1; then
        cat "$log" >&2
        die "failed: $*"
    fi
}

# wait_installs LOGS PID...: waits for installs started side by side; dies
# if any failed (its output is shown already, and kept in LOGS).
wait_installs() {
    local logs="$1" failed=0 pid
    shift
    for pid in "$@"; do
        wait "$pid" || failed=1
    done
    ((failed == 0)) || die "an install failed (its output is above; logs in $logs)"
}
