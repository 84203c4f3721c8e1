#!/usr/bin/env bash
# Runs the native unit tests of the JavaScript kit and of every JavaScript
# tool with Node's test runner:
#
#   guest-tools/js/test.sh [node --test options...]
#
# The tests run the same code the component runs, under Node, with the same
# JSON dispatch (kit/tool.js) and the host's schema checks (kit/testing.js,
# with Ajv). Ajv comes from the pinned packages install.sh installs into
# ${TOOLHOST_JS_NODE:-target/js-guests/node} (the same install build.sh
# uses). No component is built.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export TOOLHOST_JS_NODE="${TOOLHOST_JS_NODE:-$root/target/js-guests/node}"

"$here/install.sh"

mapfile -t files < <(find "$here/kit" "$here/tools" -path '*/test/*.test.js' -type f | LC_ALL=C sort)
if ((${#files[@]} == 0)); then
    echo "test.sh: no tests found" >&2
    exit 1
fi
exec node --test "$@" "${files[@]}"
