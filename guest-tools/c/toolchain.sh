# Sourced by the build scripts that compile C for wasm32 (guest-tools/c and
# guest-tools/code): the pinned Debian 12 ("bookworm") toolchain, checked
# and, as root, installed.
#
#   source guest-tools/c/toolchain.sh
#   th_c_toolchain "build.sh"     # exits with what to install when it cannot

# The packages, pinned. wasm32-wasi: Debian's wasi-libc (2022) ships only
# that triple's sysroot (/usr/lib/wasm32-wasi). libclang1-19 is bindgen's
# (the code runner generates QuickJS's bindings with it).
th_c_packages=(
    "clang-19=1:19.1.7-3~deb12u1"
    "lld-19=1:19.1.7-3~deb12u1"
    "wasi-libc=0.0~git20220510.9886d3d-2"
    "libclang-rt-19-dev-wasm32=1:19.1.7-3~deb12u1"
    "libclang1-19=1:19.1.7-3~deb12u1"
    "llvm-19=1:19.1.7-3~deb12u1"
)

# th_c_toolchain WHO: checks every package; installs the missing ones with
# apt-get when run as root, else says what to install and exits 1.
th_c_toolchain() {
    local who="$1" missing=() pin name version have
    for pin in "${th_c_packages[@]}"; do
        name="${pin%%=*}" version="${pin#*=}"
        have="$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$name" 2>/dev/null || true)"
        if [[ "$have" != ii* ]]; then
            missing+=("$pin")
        elif [[ "${have#ii }" != "$version" ]]; then
            echo "$who: note: $name ${have#ii } is installed (pinned: $version)" >&2
        fi
    done
    ((${#missing[@]})) || return 0
    if [[ "$(id -u)" != 0 ]]; then
        echo "$who: missing packages; as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "$who: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
    }
}
