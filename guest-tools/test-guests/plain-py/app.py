"""A plain component in Python: the world `plain` of wit/test-plain/plain.wit,
built with componentize-py (see ../plain-build.sh). The same functions as
the Rust and JavaScript test components; the host serves each as a tool."""

import wit_world
from wit_world import exports
from wit_world.exports import echo, lookup
from wit_world.imports import store
from componentize_py_types import Err

import counters as counters_impl


class WitWorld(wit_world.WitWorld):
    def add(self, a: int, b: int) -> int:
        total = (a + b) & 0xFFFFFFFFFFFFFFFF
        return total - (1 << 64) if total >= 1 << 63 else total

    def greet(self, name: str) -> str:
        return f"Hello, {name}!"

    def nothing(self) -> None:
        return None

    def setting(self, key: str):
        return store.get(key)

    def deep(self, v) -> int:
        return len(v)

    def find(self, word: str):
        return "a portable binary instruction format" if word == "wasm" else None


class Echo(exports.Echo):
    def integers(self, v):
        return v

    def floats(self, a, b):
        return (a, b)

    def text(self, c, s, b):
        return (c, s, b)

    def bytes(self, data):
        return (data, len(data))

    def points(self, items):
        return items

    def maybe(self, v, nested):
        return (v, nested)

    def shapes(self, s, c, p):
        return (s, c, p)

    def outcome(self, r):
        return r


class Lookup(exports.Lookup):
    def find(self, name: str) -> int:
        if name == "":
            raise Err(lookup.LookupError.BAD_NAME)
        found = {"one": 1, "two": 2}.get(name)
        if found is None:
            raise Err(lookup.LookupError.NOT_FOUND)
        return found

    def parse(self, text: str) -> int:
        if not text.isascii() or not text.isdigit():
            raise Err(lookup.ParseError_NotANumber(text))
        n = int(text)
        if n >= 1 << 64:
            raise Err(lookup.ParseError_Overflow())
        return n

    def fail(self, message: str) -> str:
        raise Err(message)


class Counters(exports.Counters):
    def bump(self, c) -> int:
        return c.next()

    def make(self, start: int):
        return counters_impl.Counter(start)

    def zero(self) -> int:
        return 0
