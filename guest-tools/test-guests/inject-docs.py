#!/usr/bin/env python3
"""Gives a component the WIT docs a published one carries.

    inject-docs.py PACKAGE.wasm COMPONENT.wasm OUT.wasm

PACKAGE.wasm is a WIT package encoded as a binary (`wasm-tools component
wit DIR --wasm`), which carries the package's doc comments in a top-level
`package-docs` custom section (the format wit-component writes). That
section is appended to COMPONENT.wasm as a top-level custom section, as
wassette's builds do after the toolchain dropped the docs."""

import sys


def leb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def docs_section(package: bytes) -> bytes:
    at = 8
    while at < len(package):
        kind = package[at]
        size, start = leb(package, at + 1)
        if kind == 0:
            name_len, name_at = leb(package, start)
            if package[name_at : name_at + name_len] == b"package-docs":
                return package[at : start + size]
        at = start + size
    sys.exit("inject-docs.py: the encoded WIT package has no package-docs section")


def main() -> None:
    package, component, out = sys.argv[1:4]
    section = docs_section(open(package, "rb").read())
    with open(out, "wb") as f:
        f.write(open(component, "rb").read() + section)


if __name__ == "__main__":
    main()
