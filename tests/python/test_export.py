#!/usr/bin/env python3
"""actorps.train exporting while it trains, as `actorps simulate --export-dir --export-every
--full-export-every` does: a built-in model named by a string ("dlrm:8:16:16") on
Criteo-format files that `actorps gen-data criteo` writes, sync runs of 120 clocks with a
version every 10 clocks.
- full_export_every=1: every version full; full_export_every=100: a full version, then deltas
  of it (no model.capnp of their own). Each delta's chain, folded by `actorps export
  --consolidate`, holds model.capnp byte-identical to the first run's full version at the same
  clock (versions may be skipped while one is written; the first two, clocks 10 and 20, are
  always written); the export after the run is the same model in both.
- Bad values are refused before training (actorps.Error), naming the option."""
import json
import os
import subprocess
import tempfile
import unittest

import harness

harness.require("numpy")  # the summary's parameters come as a NumPy array
import actorps  # noqa: E402


def binary():
    return harness.actorps_binary("writes the data and folds the chains")


def versions(directory):
    return sorted(int(v) for v in os.listdir(directory) if v.isdigit())


def chain(directory, version):
    with open(os.path.join(directory, str(version), "metadata.json")) as f:
        return json.load(f).get("chain")


def capnp(directory, version):
    with open(os.path.join(directory, str(version), "model.capnp"), "rb") as f:
        return f.read()


class ExportWhileTraining(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        gen = subprocess.run([binary(), "gen-data", "criteo", "--out", cls.dir, "--rows", "6000",
                              "--test-rows", "500"], capture_output=True, text=True, timeout=120)
        if gen.returncode != 0:
            raise AssertionError(gen.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_dlrm(self, **exports):
        """A sync run of 120 clocks, Adam as dlrm's recipe has it, exporting as `exports` say."""
        return actorps.train("dlrm:8:16:16", "criteo:" + os.path.join(self.dir, "train.tsv"),
                             os.path.join(self.dir, "test.tsv"), mode="sync", optimizer="adam",
                             lr=0.003, batch=64, steps=120, threads=2, **exports)

    def test_chain_folds_to_full_versions(self):
        a, b = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        self.run_dlrm(export_dir=a, export_every=10, full_export_every=1)
        summary = self.run_dlrm(export_dir=b, export_every=10, full_export_every=100)
        self.assertEqual(summary["clocks"], 120)
        av, bv = versions(a), versions(b)
        self.assertGreaterEqual(len(bv), 3)
        self.assertEqual(chain(b, bv[0])["kind"], "full")
        self.assertIsNone(chain(b, bv[-1]))  # the export after the run
        self.assertEqual(capnp(b, bv[-1]), capnp(a, av[-1]))
        full_at = {}
        for v in av:
            c = chain(a, v)
            if c is not None:
                self.assertEqual(c["kind"], "full")
                full_at[c["clock"]] = v
        deltas = compared = 0
        for v in bv:
            c = chain(b, v)
            if c is None or c["kind"] != "delta":
                continue
            deltas += 1
            self.assertEqual(c["base"]["version"], bv[0])
            self.assertFalse(os.path.exists(os.path.join(b, str(v), "model.capnp")))
            if c["clock"] not in full_at:  # skipped in a
                continue
            folded = os.path.join(self.dir, f"folded-{v}")
            fold = subprocess.run([binary(), "export", "--consolidate", os.path.join(b, str(v)),
                                   "--export-dir", folded], capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(fold.returncode, 0, fold.stderr)
            self.assertEqual(capnp(folded, 1), capnp(a, full_at[c["clock"]]),
                             f"the chain at clock {c['clock']} differs from the full version")
            compared += 1
        self.assertGreaterEqual(deltas, 1)
        self.assertGreaterEqual(compared, 1)

    def test_bad_values_name_the_option(self):
        x = os.path.join(self.dir, "x")
        for options, named in [({"export_every": -1}, "export_every"),
                               ({"export_every": 5, "full_export_every": 0}, "--full-export-every"),
                               ({"export_dir": "", "export_every": 5},
                                "--export-every needs --export-dir")]:
            with self.subTest(options=options):
                with self.assertRaisesRegex(actorps.Error, named):
                    self.run_dlrm(**{"export_dir": x, **options})
        self.assertFalse(os.path.exists(os.path.join(x, "1")))


if __name__ == "__main__":
    unittest.main()
