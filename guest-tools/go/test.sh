#!/usr/bin/env bash
# Runs the checks and native unit tests of the Go kit and of every Go tool.
#
#   guest-tools/go/test.sh
#
# Installs the pinned toolchain when it is missing (env.sh), then: gofmt
# (every file formatted), go vet for the host and for GOOS=wasip1 (the
# kit's component glue, component.go, is compiled only there), and go test
# on the host. The tests call the same dispatch the component runs
# (kit.Execute, kit.Render); the final word is a call through the host
# (tests/languages.rs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=env.sh
source "$here/env.sh"
cd "$here"

# testdata/ holds deliberately broken and unformatted inputs.
unformatted="$(find . -name '*.go' ! -path '*/testdata/*' -print0 | xargs -0 gofmt -l)"
if [[ -n "$unformatted" ]]; then
    echo "test.sh: not gofmt-formatted:" >&2
    echo "$unformatted" >&2
    exit 1
fi
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./...
# Not ./...: new/ is the `toolhost new` template, whose {{name}}
# placeholders only become a tool's name in a project (vet and gofmt
# still check it above).
go test -count=1 ./kit/... ./tools/...
