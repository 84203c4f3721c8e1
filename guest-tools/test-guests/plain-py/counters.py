"""The `counters` interface's resource (componentize-py finds an exported
interface's resources in the module named after it)."""

from wit_world.exports import counters


class Counter(counters.Counter):
    def __init__(self, start: int) -> None:
        self.n = start

    def next(self) -> int:
        n = self.n
        self.n = (n + 1) & 0xFFFFFFFF
        return n
