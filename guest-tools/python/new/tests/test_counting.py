"""Unit tests of the counting, natively: python3 -m unittest discover -s tests
(from the project's directory)."""

import io
import unittest

from {{name}}_tool.counting import CHUNK, count


class CountTest(unittest.TestCase):
    def test_lines_and_bytes(self):
        cases = {
            b"": (0, 0),
            b"one\ntwo\n": (2, 8),
            b"one\ntwo": (2, 7),  # a last line without a newline
            b"\n\n": (2, 2),
        }
        for data, expected in cases.items():
            with self.subTest(data=data):
                self.assertEqual(count(io.BytesIO(data)), expected)

    def test_across_chunks(self):
        data = b"x\n" * CHUNK + b"tail"
        self.assertEqual(count(io.BytesIO(data)), (CHUNK + 1, len(data)))


if __name__ == "__main__":
    unittest.main()
