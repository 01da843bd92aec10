#!/usr/bin/env python3
"""actorps.train(slice_auc=...) as --slice-auc: a built-in CTR model on Criteo files reports the
AUC of the 10 largest slices of the test rows by C6's value in its summary, each slice's rows
and clicks as the test file holds them (counted here from its text, keys by
actorps.feature_key); a field that is none, or a slice of a Python plug-in's in-memory rows, is
refused with ValueError naming slice_auc."""
import collections
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402


class SliceAucTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="actorps-slice-auc-")
        gen = subprocess.run([harness.actorps_binary("writes the Criteo files"), "gen-data",
                              "criteo", "--out", cls.dir, "--rows", "4000", "--test-rows", "2000",
                              "--seed", "3"], capture_output=True, text=True)
        assert gen.returncode == 0, gen.stderr
        cls.train = "criteo:" + os.path.join(cls.dir, "train.tsv")
        cls.test = os.path.join(cls.dir, "test.tsv")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_summary_holds_the_largest_slices(self):
        summary = actorps.train("lr", self.train, self.test, steps=20, workers=1, ps=1,
                                slice_auc="C6")
        slices = summary["final_test_slice_auc"]
        rows, clicks = collections.Counter(), collections.Counter()
        with open(self.test) as lines:
            for line in lines:
                fields = line.rstrip("\n").split("\t")
                key = actorps.feature_key(5, fields[1 + 13 + 5])
                rows[key] += 1
                clicks[key] += int(fields[0])
        want = sorted(rows, key=lambda k: (-rows[k], k))[:10]
        self.assertEqual([s["key"] for s in slices], want)
        self.assertEqual([s["rows"] for s in slices], [rows[k] for k in want])
        self.assertEqual([s["positives"] for s in slices], [clicks[k] for k in want])
        self.assertEqual(summary["final_test_slice_rest_rows"],
                         sum(rows.values()) - sum(rows[k] for k in want))
        for s in slices:
            self.assertTrue(0 <= s["auc"] <= 1 or s["positives"] in (0, s["rows"]), s)

    def test_a_field_that_is_none_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"^--slice-auc I2 is not a categorical field"):
            actorps.train("lr", self.train, self.test, steps=2, slice_auc="I2")
        x = np.zeros((64, 3), np.float32)
        y = np.zeros(64, np.int32)
        plugin = type("P", (), {"spec": actorps.ModelSpec([("w", [3])]),
                                "step": lambda *a: 0.0, "evaluate": lambda *a: 1.0})()
        with self.assertRaisesRegex(ValueError, r"^slice_auc: C6 needs a model named by a string"):
            actorps.train(plugin, (x, y), (x, y), steps=2, slice_auc="C6")


if __name__ == "__main__":
    unittest.main()
