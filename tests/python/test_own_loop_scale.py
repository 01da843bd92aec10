#!/usr/bin/env python3
"""LocalCluster.scale() in a loop of the user's own, with actorps.torch.EmbeddingBag (rows on
the shards, Adagrad state per row) and momentum on the dense parameters, sync mode, 2 workers
(threads) whose clients are kept across every change:
- shards 2 -> 3 -> 1 -> 2 between clocks: the dense parameters and every embedding row end bit
  for bit those of the run that never changed size (sync: the shard count does not change the
  math), and each scale() returns the clock the workers go on from;
- workers 2 -> 1: worker 1's client is refused by the shards, worker 0 trains on alone; then
  2 -> 3: a third worker's client, refused before, trains with the others;
- no size, a size below 1 (ValueError) and more shards than the sparse keys' buckets
  (actorps.Error) are refused before anything changes: the run goes on at its size."""
import unittest

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402
import actorps.torch  # noqa: E402
from own_loop_bags import DIM, KEYS, Net, batch, keys  # noqa: E402


class Loop:
    """A cluster and its workers' replicas and adapters, kept for the whole run."""

    def __init__(self, workers=2):
        self.ps = actorps.LocalCluster(actorps.torch.model_spec(Net()), ps=2, workers=workers,
                                       mode="sync", optimizer="momentum", lr=0.1, block_floats=8)
        self.replicas, self.adapters = [], []
        for w in range(workers):
            self.add_worker(w, 0)

    def add_worker(self, w, clock):
        model = Net()
        self.replicas.append(model)
        self.adapters.append(actorps.torch.ShardedParameters(model, self.ps.worker(w),
                                                             clock=clock))

    def train(self, start, clocks, workers=None):
        workers = workers or list(range(len(self.adapters)))

        def body(i):
            w = workers[i]
            model, shards = self.replicas[w], self.adapters[w]
            for clock in range(start, start + clocks):
                ids, offsets, y = batch(w, clock)
                torch.nn.functional.cross_entropy(model(ids, offsets), y).backward()
                shards.step()

        return harness.run_workers(body, len(workers))  # what each raised

    def rows(self):
        out = torch.empty(KEYS, DIM)
        self.adapters[0].pull_rows([(0, keys(), out)])
        return out.numpy().copy()


class OwnLoopScaleTest(unittest.TestCase):
    def test_shards_change_bit_for_bit(self):
        still = Loop()
        self.assertEqual(still.train(0, 12), [])
        moved = Loop()
        self.assertEqual(moved.train(0, 3), [])
        self.assertEqual(moved.ps.scale(ps=3), 3)
        self.assertEqual(moved.train(3, 3), [])
        self.assertEqual(moved.ps.scale(ps=1), 6)
        self.assertEqual(moved.train(6, 3), [])
        self.assertEqual(moved.ps.scale(ps=2), 9)
        self.assertEqual(moved.train(9, 3), [])
        self.assertTrue(np.array_equal(moved.ps.snapshot(), still.ps.snapshot()))
        self.assertTrue(np.array_equal(moved.rows(), still.rows()))
        # and it did train: the rows are not where a fresh cluster starts them
        self.assertGreater(np.abs(moved.rows() - Loop().rows()).max(), 1e-3)

    def test_workers_leave_and_join(self):
        loop = Loop()
        self.assertEqual(loop.train(0, 2), [])
        with self.assertRaisesRegex(ValueError, "outside the cluster's 2 workers"):
            loop.ps.worker(2)
        self.assertEqual(loop.ps.scale(workers=1), 2)
        errors = loop.train(2, 1, workers=[1])
        self.assertEqual(len(errors), 1)
        self.assertIsInstance(errors[0][1], actorps.Error)
        self.assertIn("unknown_worker: worker 1", str(errors[0][1]))
        before = loop.ps.snapshot()
        self.assertEqual(loop.train(2, 2, workers=[0]), [])  # alone: its push is the clock
        self.assertFalse(np.array_equal(loop.ps.snapshot(), before))
        self.assertEqual(loop.ps.scale(workers=3), 4)
        loop.add_worker(2, 4)  # worker 1's adapter goes on from clock 4 too
        loop.adapters[1] = actorps.torch.ShardedParameters(loop.replicas[1], loop.ps.worker(1),
                                                           clock=4)
        self.assertEqual(loop.train(4, 2), [])
        self.assertTrue(np.isfinite(loop.ps.snapshot()).all())

    def test_refusals_change_nothing(self):
        loop = Loop()
        self.assertEqual(loop.train(0, 1), [])
        with self.assertRaisesRegex(ValueError, "give ps=, workers= or both"):
            loop.ps.scale()
        with self.assertRaisesRegex(ValueError, "1 or more"):
            loop.ps.scale(ps=0)
        with self.assertRaisesRegex(actorps.Error, "more shards than the 4096 buckets"):
            loop.ps.scale(ps=5000)
        self.assertEqual(loop.train(1, 1), [])  # at its size still
        still = Loop()
        self.assertEqual(still.train(0, 2), [])
        self.assertTrue(np.array_equal(loop.ps.snapshot(), still.ps.snapshot()))


if __name__ == "__main__":
    unittest.main()
