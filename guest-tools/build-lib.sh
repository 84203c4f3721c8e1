# Sourced by the guest build scripts (guest-tools/<language>/build.sh): the
# three steps they share. Needs `root` (the repository) to be set.
#
#   digest="$( { th_files_digest < <(find … -print0); other lines…; } | th_digest )"
#   th_up_to_date "$out" "$digest" TOOLHOST_X_REBUILD && exit 0
#   th_install "$work/tool.wasm" "$out" "$digest" "a note"

# th_files_digest: reads NUL-separated file paths on stdin and prints one
# line per file, sorted: its SHA-256 and its path relative to $root (so the
# digest is the same in every checkout).
th_files_digest() {
    LC_ALL=C sort -z | xargs -0 sha256sum | sed "s|$root/||"
}

# th_digest: the SHA-256 of standard input, in hex.
th_digest() {
    sha256sum | cut -d' ' -f1
}

# th_up_to_date OUT DIGEST REBUILD_VAR: true (and says so) when OUT exists
# and was built from sources with this digest (OUT.sources), unless the
# environment variable named REBUILD_VAR is set.
th_up_to_date() {
    local out="$1" digest="$2" force="${!3:-}"
    if [[ -z "$force" && -f "$out" && "$(cat "$out.sources" 2>/dev/null)" == "$digest" ]]; then
        echo "build.sh: $out is up to date ($3=1 rebuilds)" >&2
        return 0
    fi
    return 1
}

# th_install BUILT OUT DIGEST NOTE: puts the built component at OUT and
# records its sources' digest beside it (OUT.sources, written last: a build
# stopped in between is rebuilt next time). BUILT is copied next to OUT
# first and renamed over it, so a reader (a test loading OUT) never sees
# half a file: the scripts build in a temporary directory, usually on
# another file system, where a plain mv would copy in place.
th_install() {
    local built="$1" out="$2" digest="$3" note="$4"
    mkdir -p "$(dirname "$out")"
    cp "$built" "$out.partial"
    mv -f "$out.partial" "$out"
    echo "$digest" >"$out.sources"
    echo "build.sh: $out ($(wc -c <"$out") bytes; $note)" >&2
}

# th_python_kit_venv VENV WHO: makes sure VENV holds the Python kit's
# pinned build tools (guest-tools/python/requirements.txt: componentize-py
# and wasm-tools), installing them when missing or changed; WHO names the
# script in what it says.
th_python_kit_venv() {
    local venv="$1" who="$2" reqs="$root/guest-tools/python/requirements.txt"
    if [[ ! -x "$venv/bin/componentize-py" || ! -x "$venv/bin/wasm-tools" ]] ||
        ! cmp -s "$reqs" "$venv/.toolhost-requirements.txt"; then
        echo "$who: installing $(grep -c '==' "$reqs") pinned packages into $venv" >&2
        "${PYTHON:-python3}" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs"
        cp "$reqs" "$venv/.toolhost-requirements.txt"
    fi
}
