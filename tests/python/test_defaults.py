#!/usr/bin/env python3
"""One set of defaults across the entry points (actors/ps.hpp, schedule_or_default).
- actorps.train of a built-in model with no keyword trains as `actorps simulate` with no flag
  does: the start events of the two metrics files, on the same Criteo-format files, name the
  same settings, the model's own (DLRM: Adam at 0.003, batch 256, 1 epoch) and the run's (ssp,
  staleness 2, cosine). A rate given alone goes with the model's optimizer, as --lr does.
- A Python plug-in, which declares no defaults, trains with any plug-in's: momentum at 0.05,
  batch 64, 5 epochs, ssp with staleness 2, cosine. A staleness given with sync is refused.
- LocalCluster with no mode is ssp with staleness 2: a worker runs two clocks ahead of one that
  has pushed nothing (sync would hold it at the first); its schedule is cosine over
  total_clocks when given, constant without."""
import json
import os
import subprocess
import tempfile
import threading
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402

DLRM = "dlrm:8:16:16"
# what the start event says of the settings a run trains with
SETTINGS = ["mode", "staleness_bound", "optimizer", "learning_rate", "momentum", "lr_schedule",
            "batch", "epochs", "clocks", "table_optimizer", "table_learning_rate", "admit_after"]


def binary():
    return harness.actorps_binary("writes the data and runs `actorps simulate`")


def start_event(path):
    with open(path) as f:
        starts = [e for e in map(json.loads, f) if e["event"] == "start"]
    assert len(starts) == 1, starts
    return starts[0]


class BuiltInModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        gen = subprocess.run([binary(), "gen-data", "criteo", "--out", cls.dir, "--rows", "3000",
                              "--test-rows", "300"], capture_output=True, text=True, timeout=120)
        if gen.returncode != 0:
            raise AssertionError(gen.stderr)
        cls.train_file = os.path.join(cls.dir, "train.tsv")
        cls.test_file = os.path.join(cls.dir, "test.tsv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def simulate(self, name, *flags):
        """The start event of `actorps simulate` on the files, with `flags` only."""
        metrics = os.path.join(self.dir, name + ".jsonl")
        run = subprocess.run([binary(), "simulate", "--model", DLRM, "--dataset",
                              "criteo:" + self.train_file, "--test", self.test_file,
                              "--metrics", metrics, "--threads", "2", "--no-progress", *flags],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        return start_event(metrics)

    def train(self, name, **keywords):
        """The start event of actorps.train on the files, with `keywords` only."""
        metrics = os.path.join(self.dir, name + ".jsonl")
        actorps.train(DLRM, "criteo:" + self.train_file, self.test_file, metrics=metrics,
                      threads=2, **keywords)
        return start_event(metrics)

    def test_no_keyword_trains_as_simulate_with_no_flag(self):
        cli = self.simulate("cli")
        python = self.train("python")
        for field in SETTINGS + ["settings_given"]:
            with self.subTest(field=field):
                self.assertEqual(python[field], cli[field])
        # the model's recipe and the run's rule, not Python keywords' own values
        self.assertEqual(python["optimizer"], "adam")
        self.assertAlmostEqual(python["learning_rate"], 0.003, places=6)
        self.assertEqual(python["batch"], 256)
        self.assertEqual(python["epochs"], 1)
        self.assertEqual(python["clocks"], 1500 // 256)  # 1 epoch of each worker's half
        self.assertEqual((python["mode"], python["staleness_bound"]), ("ssp", 2))
        self.assertEqual(python["lr_schedule"], "cosine")
        self.assertEqual(python["settings_given"], [])

    def test_a_rate_alone_goes_with_the_models_optimizer(self):
        cli = self.simulate("cli-lr", "--lr", "0.01", "--steps", "2")
        python = self.train("python-lr", lr=0.01, steps=2)
        for field in SETTINGS:
            with self.subTest(field=field):
                self.assertEqual(python[field], cli[field])
        self.assertEqual(python["optimizer"], "adam")
        self.assertAlmostEqual(python["learning_rate"], 0.01, places=6)
        # another optimizer without a rate runs at that optimizer's default rate
        sgd = self.train("python-sgd", optimizer="sgd", steps=2)
        self.assertEqual(sgd["optimizer"], "sgd")
        self.assertEqual(sgd["learning_rate"], self.simulate("cli-sgd", "--optimizer", "sgd",
                                                             "--steps", "2")["learning_rate"])


COLS, CLASSES = 4, 2


class TinyModel:
    """A Python plug-in that declares no defaults: a linear model trained on nothing."""

    def __init__(self):
        self.spec = actorps.ModelSpec([("w", [COLS, CLASSES])], name="py-defaults")
        self.batches = set()
        self.lock = threading.Lock()

    def step(self, worker, clock, params, grad, x, y):
        with self.lock:
            self.batches.add(len(y))
        return 0.0

    def evaluate(self, params, x, y):
        return 0.5


class PythonPlugin(unittest.TestCase):
    def test_a_plugin_without_defaults_gets_any_plugins(self):
        g = np.random.default_rng(1)

        def split(rows):
            return (g.normal(size=(rows, COLS)).astype(np.float32),
                    g.integers(0, CLASSES, rows).astype(np.int32))

        with tempfile.TemporaryDirectory() as tmp:
            model = TinyModel()
            metrics = os.path.join(tmp, "run.jsonl")
            summary = actorps.train(model, split(640), split(100), metrics=metrics, threads=2)
            start = start_event(metrics)
        self.assertEqual(start["optimizer"], "momentum")
        self.assertAlmostEqual(start["momentum"], 0.9, places=6)
        self.assertAlmostEqual(start["learning_rate"], 0.05, places=6)
        self.assertEqual((start["batch"], start["epochs"]), (64, 5))
        self.assertEqual(model.batches, {64})
        self.assertEqual(start["clocks"], 5 * (320 // 64))
        self.assertEqual(summary["clocks"], start["clocks"])
        self.assertEqual((start["mode"], start["staleness_bound"], start["lr_schedule"]),
                         ("ssp", 2, "cosine"))
        # as LocalCluster: a staleness bounds ssp only, and says so rather than being ignored
        with self.assertRaisesRegex(ValueError, r"^staleness: given with mode='sync'"):
            actorps.train(TinyModel(), split(640), split(100), mode="sync", staleness=2)


class Cluster(unittest.TestCase):
    def test_no_mode_is_ssp_with_staleness_two(self):
        spec = actorps.ModelSpec([("w", [3])])
        ps = actorps.LocalCluster(spec, ps=1, workers=2, optimizer="sgd", timeout=5)
        w0 = ps.worker(0)
        params, grad = np.zeros(3, np.float32), np.ones(3, np.float32)
        w0.wait(w0.pull(0, params))
        # worker 1 never pushes: worker 0 still gets clocks 1 and 2, 2 clocks ahead at most
        self.assertEqual(w0.wait(w0.push_pull(0, grad, params)), 1)
        self.assertEqual(w0.wait(w0.push_pull(1, grad, params)), 2)
        # sync, said explicitly, holds worker 0 at its first push_pull until worker 1 pushes
        sync = actorps.LocalCluster(spec, ps=1, workers=2, mode="sync", optimizer="sgd",
                                    timeout=0.3).worker(0)
        sync.wait(sync.pull(0, params))
        with self.assertRaises(actorps.Error) as caught:
            sync.wait(sync.push_pull(0, grad, params))
        self.assertEqual(caught.exception.code, "request_timeout")

    def steps(self, **options):
        """What one worker's SGD steps (rate 0.1, gradient 1) move the parameter by at clocks
        0 to 3."""
        w = actorps.LocalCluster(actorps.ModelSpec([("w", [1])]), ps=1, workers=1,
                                 optimizer="sgd", lr=0.1, **options).worker(0)
        params = np.zeros(1, np.float32)
        w.wait(w.pull(0, params))
        moved = []
        for clock in range(4):
            before = params[0]
            w.wait(w.push_pull(clock, np.ones(1, np.float32), params))
            moved.append(float(before - params[0]))
        return moved

    def test_schedule_is_cosine_with_total_clocks_constant_without(self):
        np.testing.assert_allclose(self.steps(), [0.1] * 4, rtol=1e-5)
        final = 0.05  # lr_final_fraction: the rate decays to 5 % of the base
        cosine = [0.1 * (final + (1 - final) * 0.5 * (1 + np.cos(np.pi * c / 4)))
                  for c in range(4)]
        np.testing.assert_allclose(self.steps(total_clocks=4), cosine, rtol=1e-5)
        np.testing.assert_allclose(self.steps(total_clocks=4, schedule="constant"), [0.1] * 4,
                                   rtol=1e-5)


if __name__ == "__main__":
    unittest.main()
