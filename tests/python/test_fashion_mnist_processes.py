#!/usr/bin/env python3
"""apps/python/examples/fashion_mnist.py --launch-local, as a user runs it: the PyTorch MLP as
one process per task from TF_CONFIG (1 ps and 2 worker processes on 127.0.0.1), 3 epochs in the
mode given as the first argument (sync, ssp with staleness 2, async), reaches test accuracy
≥ 0.85 on the real Fashion-MNIST data (the shards' final parameters, which worker 0 reads once
every other worker has finished, every test row); every process exits 0 on its own (the launcher stops none), every sample of the 3 epochs
is seen, no byte is copied by the binding and the staleness keeps to the mode's bound.

    PYTHONPATH=build/python python3 tests/python/test_fashion_mnist_processes.py ssp
"""
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
MODES = {"sync": [], "ssp": ["--staleness", "2"], "async": []}
MODE = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in MODES else "sync"
BOUND = {"sync": 0, "ssp": 2, "async": None}[MODE]


class FashionMnistProcesses(unittest.TestCase):
    def test_reaches_085_in_3_epochs(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "summary.json")
            run = subprocess.run([sys.executable, EXAMPLE, "--launch-local", "--ps", "1",
                                  "--workers", "2", "--epochs", "3", "--mode", MODE,
                                  *MODES[MODE], "--min-accuracy", "0.85", "--json", out],
                                 capture_output=True, text=True, timeout=600)
            print(run.stdout, run.stderr, sep="\n")
            self.assertEqual(run.returncode, 0)
            self.assertNotIn("stopping", run.stderr)  # no task failed, none was stopped
            with open(out) as f:
                summary = json.load(f)
        self.assertTrue(summary["processes"])
        self.assertEqual((summary["workers"], summary["shards"]), (2, 1))
        self.assertGreaterEqual(summary["final_test_accuracy"], 0.85)
        self.assertEqual(summary["bytes_copied"], 0)
        self.assertEqual(summary["clocks_per_worker"], 3 * (60000 // (2 * 64)))
        self.assertEqual(summary["samples"], 3 * (60000 // 128) * 128)
        for w in range(2):  # each worker process reported its own part
            self.assertIn(f'"index": {w}', run.stdout)
        if BOUND is not None:
            self.assertLessEqual(summary["max_staleness"], BOUND)


if __name__ == "__main__":
    unittest.main()
