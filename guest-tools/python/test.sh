#!/usr/bin/env bash
# Runs the native unit tests of the Python kit and of every Python tool.
#
#   guest-tools/python/test.sh
#
# Uses the build venv (${TOOLHOST_PY_VENV:-target/python-guests/venv}; created
# if missing) with requirements-test.txt installed in it. No component is
# built: the tests run the same code the component runs, under the venv's
# interpreter, with the same dispatch (toolhost_kit.Toolset) and the host's
# schema checks (toolhost_kit.testing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TOOLHOST_PY_VENV:-$root/target/python-guests/venv}"
python="${PYTHON:-python3}"

stamp="$venv/.toolhost-requirements-test.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$here/requirements-test.txt" "$stamp"; then
    [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-test.txt"
    cp "$here/requirements-test.txt" "$stamp"
fi

export PYTHONDONTWRITEBYTECODE=1
status=0
run() { # label, PYTHONPATH, test directory
    echo "== $1" >&2
    PYTHONPATH="$2" "$venv/bin/python" -m unittest discover -s "$3" -t "$3" || status=1
}
run kit "$here/kit" "$here/kit/tests"
for dir in "$here"/tools/*/; do
    tool="$(basename "$dir")"
    if [[ -d "$dir/tests" ]]; then
        run "tool $tool" "$here/kit:$dir" "$dir/tests"
    fi
done
exit "$status"
