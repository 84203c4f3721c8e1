"""Counting lines and bytes: plain Python, tested natively in tests/."""

CHUNK = 64 * 1024


def count(stream):
    """The lines and bytes of a binary stream, as ``(lines, bytes)``.

    It reads a chunk at a time, so a file of any size takes constant memory,
    and counts with ``bytes.count``, which runs in C: inside a component
    every Python instruction costs fuel. A last line without a newline
    counts too.
    """
    lines = size = 0
    last = b"\n"
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        lines += chunk.count(b"\n")
        size += len(chunk)
        last = chunk[-1:]
    if last != b"\n":
        lines += 1
    return lines, size
