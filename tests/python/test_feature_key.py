#!/usr/bin/env python3
"""actorps.feature_key against an independent port of the hash written from the description an
export's metadata.json gives (the one a serving team would write): every Criteo field, values
of every length around the 8-byte word, missing values, non-ASCII bytes; and its refusals."""
import unittest

import harness

import actorps  # noqa: E402

M = (1 << 64) - 1


def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)


def ported_key(field, value):
    data = value.encode() if isinstance(value, str) else value
    if not data:
        return field << 56
    h = 0x9e3779b97f4a7c15 ^ len(data)
    for i in range(0, len(data), 8):
        h = (mix(h ^ int.from_bytes(data[i:i + 8], "little")) + 0x632be59bd9b4e019) & M
    low = mix(h) & ((1 << 56) - 1)
    return (field << 56) | (low or 1)


VALUES = ["", "a", "68fd1e64", "68fd1e6", "68fd1e64a", "0123456789abcdef", "0123456789abcdef0",
          "é", "日本", "x" * 100, b"\x00", b"\xff" * 9]


class FeatureKey(unittest.TestCase):
    def test_every_field_matches_the_port(self):
        for field in range(26):
            for value in VALUES:
                with self.subTest(field=field, value=value):
                    expected = ported_key(field, value)
                    self.assertEqual(actorps.feature_key(field, value), expected)
                    self.assertEqual(actorps.feature_key("C%d" % (field + 1), value), expected)
        self.assertEqual(actorps.feature_key(2, ""), 2 << 56)
        self.assertEqual(actorps.feature_key(255, "v") >> 56, 255)

    def test_refusals_name_the_argument(self):
        for field in ["C0", "C27", "D1", "C", "C1x", -1, 256]:
            with self.subTest(field=field):
                with self.assertRaises(ValueError) as caught:
                    actorps.feature_key(field, "v")
                self.assertIn("field", str(caught.exception))
        with self.assertRaises(TypeError):
            actorps.feature_key(0, 5)


if __name__ == "__main__":
    unittest.main()
