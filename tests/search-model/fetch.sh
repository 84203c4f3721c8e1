#!/usr/bin/env bash
# The search model's wheel for the tests, fetched once into
# target/search-model/ and checked against its pin; prints its path.
# make test exports it as TOOLHOST_SEARCH_MODEL, so every host the tests
# start ranks with the real model without fetching it into each test's own
# HOME. The pin is toolhost_embed::WORDLLAMA's (a unit test of
# host/embed reads this file and compares).
set -euo pipefail
URL=https://files.pythonhosted.org/packages/f4/01/b7f3d70ad44c1c7d35914f0db93893882ce0f5e2cb7341215dc89a153cfa/wordllama-0.4.0.post1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
SHA256=2dc004ed04438e4a9ce263ef69b1d7dcc5099da7277e08ddedfd35810428ba31
root=$(cd "$(dirname "$0")/../.." && pwd)
dir="$root/target/search-model"
wheel="$dir/${URL##*/}"
if [[ -f "$wheel" ]] && echo "$SHA256  $wheel" | sha256sum -c --status; then
    echo "$wheel"
    exit 0
fi
mkdir -p "$dir"
partial="$wheel.partial.$$"
trap 'rm -f "$partial"' EXIT
curl --fail --silent --show-error --location --retry 3 --output "$partial" "$URL"
if ! echo "$SHA256  $partial" | sha256sum -c --status; then
    echo "fetch.sh: $URL does not hash to the pinned $SHA256" >&2
    exit 1
fi
mv "$partial" "$wheel"
echo "$wheel"
