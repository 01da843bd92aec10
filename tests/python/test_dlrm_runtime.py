#!/usr/bin/env python3
"""apps/python/examples/dlrm.py --runtime: the PyTorch DLRM (actorps.torch.EmbeddingBag) trained
by actorps.torch.train, the runtime owning the loop, on `actorps gen-data criteo` data (40 000
training and 5 000 test lines, seed 5), 2 workers and 2 shards in sync mode for one epoch.
- It learns (test AUC at least 0.70; the generator's planted model scores about 0.80).
- Shard 0 killed at clock 100 is restored from the checkpoint of clock 60, shard 1 killed with
  a hot standby fails over: both runs end at the clean run's AUC exactly.
- A run of 60 clocks checkpointed and resumed to 120 ends at the AUC of one run straight to 120.
Each figure is the runtime evaluator's, from the run's own summary."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness

harness.require("numpy", "torch")

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python",
                       "examples", "dlrm.py")
MIN_AUC = 0.70


class DlrmRuntime(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        gen = subprocess.run([harness.actorps_binary("the data"), "gen-data", "criteo", "--out",
                              cls.tmp, "--rows", "40000", "--test-rows", "5000", "--seed", "5"],
                             capture_output=True, text=True, timeout=120)
        assert gen.returncode == 0, gen.stderr
        cls.clean = cls.run_example("clean")

    @classmethod
    def run_example(cls, tag, *flags):
        out = os.path.join(cls.tmp, tag + ".json")
        run = subprocess.run([sys.executable, EXAMPLE, "--data", cls.tmp, "--runtime", "--json",
                              out, *flags], capture_output=True, text=True, timeout=280)
        print(run.stdout[-2000:], run.stderr[-4000:], sep="\n")
        assert run.returncode == 0, f"dlrm.py --runtime {' '.join(flags)} exited {run.returncode}"
        with open(out) as f:
            return json.load(f)

    def test_it_learns(self):
        self.assertGreaterEqual(self.clean["final_test_auc"], MIN_AUC)
        self.assertEqual(self.clean["clocks"], 40000 // 128 // 2)
        self.assertEqual(self.clean["failures"], 0)

    def test_a_killed_shard_recovers_its_rows(self):
        ckpt = os.path.join(self.tmp, "ckpt-kill")
        restored = self.run_example("restored", "--kill", "ps:0@100", "--checkpoint-dir", ckpt,
                                    "--checkpoint-every", "60")
        self.assertEqual(restored["recoveries"], 1)
        self.assertEqual(restored["final_test_auc"], self.clean["final_test_auc"])
        standby = self.run_example("standby", "--kill", "ps:1@100", "--replicas", "1")
        self.assertEqual(standby["failovers"], 1)
        self.assertEqual(standby["final_test_auc"], self.clean["final_test_auc"])

    def test_checkpoint_and_resume_continue_exactly(self):
        ckpt = os.path.join(self.tmp, "ckpt-resume")
        straight = self.run_example("straight", "--steps", "120")
        first = self.run_example("first", "--steps", "60", "--checkpoint-dir", ckpt)
        second = self.run_example("second", "--steps", "120", "--checkpoint-dir", ckpt,
                                  "--resume", ckpt)
        self.assertEqual(second["resumed_from"], 60)
        self.assertNotEqual(first["final_test_auc"], straight["final_test_auc"])
        self.assertEqual(second["final_test_auc"], straight["final_test_auc"])


if __name__ == "__main__":
    unittest.main()
