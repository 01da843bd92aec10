#!/usr/bin/env python3
"""apps/python/examples/fashion_mnist.py, as a user runs it: the PyTorch MLP with 2 workers in
one process, sync mode, 3 epochs, reaches test accuracy ≥ 0.85 on the real Fashion-MNIST data;
never stale, no byte copied by the binding, every sample of the 3 epochs seen."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness

harness.require("numpy", "torch")

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python",
                       "examples", "fashion_mnist.py")


class FashionMnistExample(unittest.TestCase):
    def test_reaches_085_in_3_epochs(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "summary.json")
            run = subprocess.run([sys.executable, EXAMPLE, "--epochs", "3", "--workers", "2",
                                  "--mode", "sync", "--min-accuracy", "0.85", "--json", out],
                                 capture_output=True, text=True, timeout=600)
            print(run.stdout, run.stderr, sep="\n")
            self.assertEqual(run.returncode, 0)
            with open(out) as f:
                summary = json.load(f)
        self.assertGreaterEqual(summary["final_test_accuracy"], 0.85)
        self.assertEqual(summary["max_staleness"], 0)
        self.assertEqual(summary["bytes_copied"], 0)
        self.assertEqual(summary["clocks_per_worker"], 3 * (60000 // (2 * 64)))
        self.assertEqual(summary["samples"], 3 * (60000 // 128) * 128)


if __name__ == "__main__":
    unittest.main()
