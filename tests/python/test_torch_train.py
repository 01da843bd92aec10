#!/usr/bin/env python3
"""actorps.torch.train: the runtime owns the loop of an nn.Module whose embeddings live on the
shards (actorps.torch.EmbeddingBag), on a generated click log whose true model is known.
- Trained in sync mode for 8 epochs, the evaluations' AUC (the runtime's, in the metrics
  file) comes within 0.01 of the generator's own AUC on the test rows; the module ends
  holding the run's final dense parameters.
- A shard killed mid-run with a hot standby (replicas=1) loses nothing: parameters and AUC
  bit-identical to the clean run; killed without one, it is restored from the newest
  checkpoint and the sync run still ends bit-identical.
- A run checkpointed at clock 60 and resumed to clock 120 ends bit-identical to one run
  straight to 120.
- A dense classifier (no bags) reports accuracy; a forward that reads other ids than it
  named, and a malformed data tuple, are refused naming why."""
import json
import os
import tempfile
import unittest

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402
import actorps.torch  # noqa: E402

FIELDS, VALUES, DENSE, DIM = 4, 50, 3, 4


def click_log(rows, seed):
    """(dense, keys, clicks) and the true click probabilities: a logistic model over 3 dense
    features and one weight per (field, value)."""
    g = np.random.default_rng(seed)
    truth = np.random.default_rng(7)
    weights = truth.normal(size=(FIELDS, VALUES))
    dense_w = truth.normal(size=DENSE)
    values = g.integers(0, VALUES, size=(rows, FIELDS))
    dense = g.normal(size=(rows, DENSE)).astype(np.float32)
    p = 1 / (1 + np.exp(-(dense @ dense_w + weights[np.arange(FIELDS), values].sum(1) - 0.5)))
    clicks = (g.random(rows) < p).astype(np.float32)
    keys = (np.arange(FIELDS, dtype=np.int64)[None, :] << 56) | values.astype(np.int64)
    return (torch.from_numpy(dense), torch.from_numpy(keys), torch.from_numpy(clicks)), p


def auc(scores, labels):
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels > 0.5
    npos, nneg = pos.sum(), len(labels) - pos.sum()
    return float((ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg))


class ClickNet(torch.nn.Module):
    """One embedding row per (field, value), concatenated with the dense features, one logit."""

    def __init__(self):
        super().__init__()
        self.emb = actorps.torch.EmbeddingBag(DIM, mode="sum", init="uniform", scale=0.05,
                                              optimizer="adagrad", lr=0.1, name="ids")
        self.out = torch.nn.Linear(DENSE + FIELDS * DIM, 1)

    def forward(self, dense, keys):
        rows = self.emb(keys.reshape(-1, 1)).view(len(dense), -1)
        return self.out(torch.cat([dense, rows], 1)).squeeze(1)


TRAIN, _ = click_log(8000, 1)
TEST, TEST_P = click_log(2000, 2)
BEST_AUC = auc(TEST_P, TEST[2].numpy())


def summary_event(path):
    with open(path) as f:
        return [json.loads(line) for line in f if '"event":"summary"' in line][-1]


def run(tmp, tag, module=None, **options):
    metrics = os.path.join(tmp, tag + ".jsonl")
    settings = dict(ps=2, workers=2, mode="sync", optimizer="adagrad", lr=0.1, batch=64, epochs=8)
    settings.update(options)
    out = actorps.torch.train(module or ClickNet(), torch.nn.BCEWithLogitsLoss(), TRAIN, TEST,
                              metrics=metrics, **settings)
    return out, summary_event(metrics)


class TorchTrainTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.module = ClickNet()
        cls.clean, cls.clean_event = run(cls.tmp, "clean", cls.module)

    def test_the_runtime_trains_the_module_to_the_generator_s_auc(self):
        got = self.clean_event["final_test_auc"]
        self.assertGreater(got, BEST_AUC - 0.01, f"AUC {got:.4f}, the generator's {BEST_AUC:.4f}")
        self.assertEqual(self.clean["clocks"], 8 * (4000 // 64))
        self.assertEqual(self.clean_event["sparse_rows_peak"][0][0]
                         + self.clean_event["sparse_rows_peak"][1][0], FIELDS * VALUES)
        dense = torch.cat([p.detach().reshape(-1) for p in self.module.parameters()])
        self.assertTrue(np.array_equal(dense.numpy(), self.clean["parameters"]))

    def test_a_killed_shard_with_a_standby_loses_nothing(self):
        out, event = run(self.tmp, "standby", kill=[("ps", 1, 200)], replicas=1)
        self.assertEqual(out["failovers"], 1)
        self.assertTrue(np.array_equal(out["parameters"], self.clean["parameters"]))
        self.assertEqual(event["final_test_auc"], self.clean_event["final_test_auc"])

    def test_a_killed_shard_is_restored_from_a_checkpoint(self):
        ckpt = os.path.join(self.tmp, "ckpt-kill")
        out, event = run(self.tmp, "rollback", kill=[("ps", 0, 250)], checkpoint_dir=ckpt,
                         checkpoint_every=100)
        self.assertEqual(out["recoveries"], 1)
        self.assertTrue(np.array_equal(out["parameters"], self.clean["parameters"]))
        self.assertEqual(event["final_test_auc"], self.clean_event["final_test_auc"])

    def test_checkpoint_and_resume_continue_exactly(self):
        ckpt = os.path.join(self.tmp, "ckpt-resume")
        # A constant rate: a cosine schedule would decay over each run's own length.
        fixed = dict(epochs=None, schedule="constant")
        straight, straight_event = run(self.tmp, "straight", steps=120, **fixed)
        first, _ = run(self.tmp, "first", steps=60, checkpoint_dir=ckpt, **fixed)
        second, second_event = run(self.tmp, "second", steps=120, checkpoint_dir=ckpt,
                                   resume=ckpt, **fixed)
        self.assertEqual(second["resumed_from"], 60)
        self.assertFalse(np.array_equal(first["parameters"], straight["parameters"]))
        self.assertTrue(np.array_equal(second["parameters"], straight["parameters"]))
        self.assertEqual(second_event["final_test_auc"], straight_event["final_test_auc"])

    def test_the_export_serves_the_run_s_auc_in_this_process(self):
        # model.capnp holds the tensors and every row; a fresh module loaded from it scores the
        # test rows in this process as the run's evaluator did (same logits, same AUC).
        export = os.path.join(self.tmp, "export")
        out, event = run(self.tmp, "export", export_dir=export)
        self.assertTrue(os.path.isfile(os.path.join(out["export"], "model.capnp")))
        dense = torch.load(os.path.join(out["export"], "module.pt"))
        self.assertEqual(sorted(dense), ["out.bias", "out.weight"])
        model = actorps.read_export(export)
        keys, rows = model["tables"]["ids"]
        self.assertEqual(len(keys), FIELDS * VALUES)
        self.assertTrue(bool((keys[1:] > keys[:-1]).all()))
        fresh = actorps.torch.load_export(ClickNet(), export)
        self.assertTrue(torch.equal(fresh.out.weight, dense["out.weight"]))
        with torch.no_grad():
            logits = fresh(TEST[0], TEST[1]).numpy()
        self.assertAlmostEqual(auc(logits, TEST[2].numpy()), event["final_test_auc"], places=9)
        with self.assertRaisesRegex(ValueError, "no table 'other'"):
            net = ClickNet()
            net.emb = actorps.torch.EmbeddingBag(DIM, name="other")
            actorps.torch.load_export(net, export)
        with open(os.path.join(out["export"], "model.capnp"), "r+b") as f:
            f.seek(200)
            f.write(b"\xff")
        with self.assertRaisesRegex(RuntimeError, "SHA-256"):
            actorps.read_export(export)

    def test_a_dense_classifier_reports_its_accuracy(self):
        g = np.random.default_rng(3)
        x = torch.from_numpy(g.normal(size=(3000, 5)).astype(np.float32))
        y = (x[:, 0] - x[:, 1] > 0).long() + (x[:, 2] > 1).long()
        net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        out = actorps.torch.train(net, torch.nn.CrossEntropyLoss(), (x[:2400], y[:2400]),
                                  (x[2400:], y[2400:]), ps=1, workers=2, mode="sync",
                                  optimizer="sgd", lr=0.2, batch=32, epochs=10)
        with torch.no_grad():
            mine = float((net(x[2400:]).argmax(1) == y[2400:]).float().mean())
        self.assertGreater(out["final_test_accuracy"], 0.9)
        self.assertAlmostEqual(out["final_test_accuracy"], mine, places=6)

    def test_a_forward_that_reads_other_ids_is_refused(self):
        class Drifting(ClickNet):
            def forward(self, dense, keys):
                n = len(dense)
                self.calls = getattr(self, "calls", 0) + 1  # every other forward: one id more
                if self.calls % 2 == 0:
                    keys = torch.cat([keys, keys[:1]])
                    dense = torch.cat([dense, dense[:1]])
                return super().forward(dense, keys)[:n]

        with self.assertRaisesRegex(RuntimeError, "EmbeddingBag 'ids'.*recorded"):
            run(self.tmp, "drifting", Drifting(), workers=1, steps=4, epochs=None)

    def test_a_malformed_split_is_refused(self):
        with self.assertRaisesRegex(ValueError, "train: element 1 has 10 rows"):
            actorps.torch.train(ClickNet(), torch.nn.BCEWithLogitsLoss(),
                                (TRAIN[0], TRAIN[1][:10], TRAIN[2]), TEST)


if __name__ == "__main__":
    unittest.main()
