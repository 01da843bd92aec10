#!/usr/bin/env python3
"""actorps.train: the runtime owns the loop around a model plug-in written in Python (softmax
regression in NumPy).
- A first run (2 workers, 2 shards, sync, 8 clocks) checkpoints at its end; the evaluator
  callable's accuracies are the ones in the metrics JSONL's evaluation events and the
  summary's final accuracy.
- A second run resumes from that checkpoint to clock 12: its steps start at clock 8 (the
  clock continues), the parameters its first step sees are the first run's final ones, and
  it ends at clock 12 having trained on.
- Killed actors (a worker, a shard) are recovered by the runtime and the run ends on time;
  with replicas=1 killed shards lose nothing (bit-identical to a run without kills).
- resizes=[(ps, clock)] changes the number of shards mid-run: in sync mode the parameters are
  those of the run never resized, bit for bit, one resize event per change; (ps, clock,
  workers) changes the number of workers too: the model's step() sees every (part, minibatch)
  of the run never resized exactly once, and each minibatch teaches as much as before (a
  gradient that does not depend on the parameters ends, in sync and async, where the run never
  resized ends).
- A step() that raises ends the run with RuntimeError naming the exception.
- tensorboard_dir writes event files that tests/tfevents_check.py finds the evaluations in."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402

COLS = 6
CLASSES = 3
BATCH = 16


def data(rows, seed):
    g = np.random.default_rng(seed)
    w = np.random.default_rng(99).normal(size=(COLS, CLASSES))
    x = g.normal(size=(rows, COLS)).astype(np.float32)
    return x, (x @ w).argmax(1).astype(np.int32)


def softmax_grad(params, x, y):
    w = params[:COLS * CLASSES].reshape(COLS, CLASSES)
    b = params[COLS * CLASSES:]
    z = x @ w + b
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-12).mean()
    p[np.arange(len(y)), y] -= 1
    p /= len(y)
    return loss, x.T @ p, p.sum(0)


class SoftmaxModel:
    """The plug-in: spec, step (gradient of the mean loss into grad), evaluate."""

    def __init__(self):
        self.spec = actorps.ModelSpec([("w", [COLS, CLASSES], "uniform", 0.1), ("b", [CLASSES])],
                                      name="py-softmax")
        self.lock = threading.Lock()
        self.steps = []          # (worker, clock, params at the step)
        self.accuracies = []     # what evaluate returned, in order

    def step(self, worker, clock, params, grad, x, y):
        assert not params.flags.writeable and grad.flags.writeable
        assert x.shape == (BATCH, COLS) and y.shape == (BATCH,)
        loss, gw, gb = softmax_grad(params, x, y)
        grad[:COLS * CLASSES] = gw.ravel()
        grad[COLS * CLASSES:] = gb
        with self.lock:
            self.steps.append((worker, clock, params.copy()))
        return loss

    def evaluate(self, params, x, y):
        w = params[:COLS * CLASSES].reshape(COLS, CLASSES)
        accuracy = float(((x @ w + params[COLS * CLASSES:]).argmax(1) == y).mean())
        self.accuracies.append(accuracy)
        return accuracy, 0.5


def evaluation_accuracies(path):
    with open(path) as f:
        events = [json.loads(line) for line in f]
    return [e["test_accuracy"] for e in events if "test_accuracy" in e]


class DriftModel(SoftmaxModel):
    """A gradient that does not depend on the parameters (each minibatch's mean input): the
    final parameters are the start less the rate per minibatch times the sum over the
    minibatches trained, whichever worker trained them and when."""

    def step(self, worker, clock, params, grad, x, y):
        grad[:COLS * CLASSES] = np.repeat(x.mean(0), CLASSES)
        grad[COLS * CLASSES:] = y.mean()
        with self.lock:
            self.steps.append((worker, clock, None))
        return 0.0


class Train(unittest.TestCase):
    def run_model(self, model, **kwargs):
        options = dict(ps=2, workers=2, mode="sync", optimizer="sgd", lr=0.5,
                       schedule="constant", batch=BATCH, eval_every=4, seed=3)
        options.update(kwargs)
        return actorps.train(model, data(640, 1), data(200, 2), **options)

    def test_checkpoint_then_resume(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            first = SoftmaxModel()
            one = self.run_model(first, steps=8, checkpoint_dir=ckpt,
                                 metrics=os.path.join(tmp, "one.jsonl"))
            self.assertEqual(one["clocks"], 8)
            self.assertEqual(one["checkpoints"], 1)
            self.assertEqual(one["resumed_from"], -1)
            self.assertEqual(sorted({c for _, c, _ in first.steps}), list(range(8)))
            logged = evaluation_accuracies(os.path.join(tmp, "one.jsonl"))
            self.assertGreaterEqual(len(first.accuracies), 2)
            self.assertEqual(logged, first.accuracies[:len(logged)])
            self.assertIn(one["final_test_accuracy"], first.accuracies)
            self.assertGreater(one["final_test_accuracy"], 0.6)  # chance: about 1/3
            self.assertIn("MANIFEST.json", os.listdir(os.path.join(ckpt, "ckpt-000000000008")))

            second = SoftmaxModel()
            two = self.run_model(second, steps=12, checkpoint_dir=ckpt, resume=ckpt,
                                 metrics=os.path.join(tmp, "two.jsonl"))
            self.assertEqual(two["resumed_from"], 8)
            self.assertEqual(min(c for _, c, _ in second.steps), 8)
            self.assertEqual(sorted({c for _, c, _ in second.steps}), list(range(8, 12)))
            for worker, clock, params in second.steps:
                if clock == 8:
                    np.testing.assert_array_equal(params, one["parameters"], f"worker {worker}")
            self.assertFalse(np.array_equal(two["parameters"], one["parameters"]))
            self.assertEqual(evaluation_accuracies(os.path.join(tmp, "two.jsonl")),
                             second.accuracies[:len(evaluation_accuracies(
                                 os.path.join(tmp, "two.jsonl")))])

    def test_tensorboard_dir_holds_every_evaluation(self):
        with tempfile.TemporaryDirectory() as tmp:
            metrics, tb = os.path.join(tmp, "run.jsonl"), os.path.join(tmp, "tb")
            self.run_model(SoftmaxModel(), steps=12, metrics=metrics, tensorboard_dir=tb)
            check = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                 "tfevents_check.py")
            done = subprocess.run([sys.executable, check, tb, metrics], capture_output=True,
                                  text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            # Training never waits for the evaluator: when the one at clock 4 is still running
            # at clock 8, the next one scores a later clock or only the final one (clock 12)
            # comes. Every evaluation the metrics file has must be in the event file.
            with open(metrics) as f:
                clocks = [e["clock"] for e in map(json.loads, f) if e["event"] == "eval"]
            self.assertEqual(clocks[0], 4)
            self.assertEqual(clocks[-1], 12)
            self.assertIn(f"{len(clocks)} evaluations match", done.stdout)

    def test_a_lost_worker_and_a_lost_shard_are_recovered(self):
        # The runtime owns recovery: worker 1 killed at clock 3 is replaced, shard 0 killed at
        # clock 6 sends the run back to the checkpoint at clock 4, and the run ends at 12.
        with tempfile.TemporaryDirectory() as tmp:
            model = SoftmaxModel()
            out = self.run_model(model, steps=12, checkpoint_dir=tmp, checkpoint_every=4,
                                 kill=[("worker", 1, 3), ("ps", 0, 6)],
                                 metrics=os.path.join(tmp, "run.jsonl"))
            self.assertEqual(out["clocks"], 12)
            self.assertEqual(out["failures"], 2)
            self.assertEqual(out["recoveries"], 2)
            with open(os.path.join(tmp, "run.jsonl")) as f:
                events = [json.loads(line)["event"] for line in f]
            self.assertEqual(events.count("failure"), 2)
            self.assertEqual(events.count("recovery"), 2)
            # clocks after the checkpoint at 4 were stepped again after the rollback
            clocks = [c for w, c, _ in model.steps if w == 0]
            self.assertGreater(len(clocks), len(set(clocks)))
            self.assertEqual(sorted(set(clocks)), list(range(12)))
            self.assertTrue(np.isfinite(out["parameters"]).all())
            self.assertGreater(out["final_test_accuracy"], 0.6)
        # With a hot standby per shard the same kills lose nothing: the parameters are the
        # ones of the run without kills, bit for bit.
        clean = self.run_model(SoftmaxModel(), steps=12)
        model = SoftmaxModel()
        out = self.run_model(model, steps=12, replicas=1, kill=[("ps", 0, 4), ("ps", 1, 7)])
        self.assertEqual(out["failures"], 2)
        self.assertEqual(out["failovers"], 2)
        np.testing.assert_array_equal(out["parameters"], clean["parameters"])
        clocks = [c for w, c, _ in model.steps if w == 0]
        self.assertEqual(clocks, list(range(12)))  # no clock stepped twice: no rollback
        with self.assertRaisesRegex(actorps.Error, "--kill ps:2@clock=1: there is no ps:2 \\(2 in this run\\)"):
            self.run_model(SoftmaxModel(), steps=4, kill=[("ps", 2, 1)])

    def test_resizes_keep_the_parameters_of_the_run_never_resized(self):
        clean = self.run_model(SoftmaxModel(), steps=12)
        with tempfile.TemporaryDirectory() as tmp:
            metrics = os.path.join(tmp, "run.jsonl")
            out = self.run_model(SoftmaxModel(), steps=12, resizes=[(3, 4), (1, 8)],
                                 metrics=metrics)
            with open(metrics) as f:
                resizes = [e for e in map(json.loads, f) if e["event"] == "resize"]
        self.assertEqual(out["shards"], 1)
        self.assertEqual(out["clocks"], 12)
        np.testing.assert_array_equal(out["parameters"], clean["parameters"])
        self.assertEqual([(e["from"], e["to"], e["clock"]) for e in resizes],
                         [(2, 3, 4), (3, 1, 8)])
        with self.assertRaisesRegex(actorps.Error, "--resize: ps=3@clock=12: the clock is 1 to 11"):
            self.run_model(SoftmaxModel(), steps=12, resizes=[(3, 12)])
        # how the rows move (a dense model has none to copy ahead): either way the same values
        never = self.run_model(SoftmaxModel(), steps=12, resizes=[(3, 4)], copy_ahead="never")
        np.testing.assert_array_equal(never["parameters"], clean["parameters"])
        with self.assertRaisesRegex(actorps.Error,
                                    r"--copy-ahead must be auto, always or never \(got sometimes\)"):
            self.run_model(SoftmaxModel(), steps=12, resizes=[(3, 4)], copy_ahead="sometimes")

    def test_resized_workers_step_every_minibatch_once(self):
        clean_model, model = SoftmaxModel(), SoftmaxModel()
        clean = self.run_model(clean_model, steps=12)
        out = self.run_model(model, steps=12, resizes=[(0, 4, 4), (3, 8, 3)])
        # step() is given the part of the data and its minibatch: those of the run never resized
        stepped = sorted((w, c) for w, c, _ in model.steps)
        self.assertEqual(stepped, sorted((w, c) for w, c, _ in clean_model.steps))
        self.assertEqual(len(stepped), 24)
        self.assertEqual((out["workers"], out["shards"]), (3, 3))
        self.assertEqual(out["samples"], clean["samples"])
        with self.assertRaisesRegex(ValueError, r"each is \(ps, clock\) or \(ps, clock, workers\)"):
            self.run_model(SoftmaxModel(), steps=12, resizes=[(3,)])

    def test_resized_workers_keep_the_rate_per_minibatch(self):
        for mode in ("sync", "async"):
            clean = self.run_model(DriftModel(), steps=12, mode=mode)
            out = self.run_model(DriftModel(), steps=12, mode=mode, resizes=[(0, 4, 4), (0, 8, 3)])
            self.assertEqual(out["samples"], clean["samples"])
            np.testing.assert_allclose(out["parameters"], clean["parameters"], rtol=1e-5,
                                       atol=1e-6, err_msg=mode)

    def test_signed_checkpoints_resume_only_with_the_key(self):
        # checkpoint_key as --checkpoint-key: the manifest is signed with HMAC-SHA256 of the
        # key file's bytes; a resume without the key, or with another, is refused naming why.
        with tempfile.TemporaryDirectory() as tmp:
            key, other = os.path.join(tmp, "key"), os.path.join(tmp, "other")
            with open(key, "w") as f:
                f.write("0123456789abcdef0123456789abcdef\n")
            with open(other, "w") as f:
                f.write("fedcba9876543210fedcba9876543210\n")
            ckpt = os.path.join(tmp, "ckpt")
            one = self.run_model(SoftmaxModel(), steps=8, checkpoint_dir=ckpt, checkpoint_key=key)
            self.assertEqual(one["checkpoints"], 1)
            with open(os.path.join(ckpt, "ckpt-000000000008", "MANIFEST.json")) as f:
                manifest = json.load(f)
            self.assertEqual(manifest["signature"]["algorithm"], "hmac-sha256")
            with self.assertRaisesRegex(actorps.Error, "no key was given to check it"):
                self.run_model(SoftmaxModel(), steps=12, resume=ckpt)
            with self.assertRaisesRegex(actorps.Error, "signature does not match"):
                self.run_model(SoftmaxModel(), steps=12, resume=ckpt, checkpoint_key=other)
            with self.assertRaisesRegex(actorps.Error, "--checkpoint-key .*missing"):
                self.run_model(SoftmaxModel(), steps=12, checkpoint_key=os.path.join(tmp, "missing"))
            two = self.run_model(SoftmaxModel(), steps=12, checkpoint_dir=ckpt, resume=ckpt,
                                 checkpoint_key=key)
            self.assertEqual(two["resumed_from"], 8)
            self.assertEqual(two["clocks"], 12)

    def test_resume_of_another_run_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.run_model(SoftmaxModel(), steps=4, checkpoint_dir=tmp)
            with self.assertRaisesRegex(actorps.Error, "cannot continue this run"):
                self.run_model(SoftmaxModel(), steps=8, resume=tmp, batch=8)

    def test_a_raising_step_ends_the_run_with_its_error(self):
        class Broken(SoftmaxModel):
            def step(self, *args):
                raise ValueError("no gradient today")

        with self.assertRaisesRegex(RuntimeError, "step: ValueError: no gradient today"):
            self.run_model(Broken(), steps=4)


if __name__ == "__main__":
    unittest.main()
