#!/usr/bin/env python3
"""LocalCluster.checkpoint() and restore() in a loop of the user's own, with
actorps.torch.EmbeddingBag (rows on the shards, Adagrad state per row) and momentum on the dense
parameters, in sync mode with 2 workers (threads):
- trained N clocks, checkpointed, trained M more; a fresh cluster restored from the checkpoint
  and trained the same M clocks ends with the same dense parameters and the same embedding
  rows, bit for bit (a fresh cluster not restored ends elsewhere: the restore is what counts);
- the checkpoint is the run's format on disk: MANIFEST.json, run.capnp and one shard file per
  shard, whose sizes add up to the bytes checkpoint() reports;
- a cluster of another table layout (its rows' optimizer) refuses it, naming the table."""
import json
import os
import shutil
import tempfile
import unittest

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402
import actorps.torch  # noqa: E402
from own_loop_bags import DIM, KEYS, Net, batch, keys  # noqa: E402

WORKERS = 2
SHARDS = 2
N = 4  # clocks before the checkpoint
M = 3  # clocks after it


def cluster(model):
    return actorps.LocalCluster(actorps.torch.model_spec(model), ps=SHARDS, workers=WORKERS,
                                mode="sync", optimizer="momentum", lr=0.1, block_floats=8)


def train(ps, start, clocks):
    """Each worker on its own thread, its own replica, from clock `start` for `clocks`
    clocks; returns worker 0's adapter (to read rows with)."""
    replicas = [Net() for _ in range(WORKERS)]
    adapters = [actorps.torch.ShardedParameters(m, ps.worker(w), clock=start)
                for w, m in enumerate(replicas)]

    def body(w):
        model, shards = replicas[w], adapters[w]
        for clock in range(start, start + clocks):
            ids, offsets, y = batch(w, clock)
            torch.nn.functional.cross_entropy(model(ids, offsets), y).backward()
            shards.step()

    errors = harness.run_workers(body, WORKERS)
    assert not errors, errors
    return adapters[0]


def rows(adapter):
    out = torch.empty(KEYS, DIM)
    adapter.pull_rows([(0, keys(), out)])
    return out.numpy().copy()


class OwnLoopCheckpointTest(unittest.TestCase):
    def test_restored_cluster_continues_bit_for_bit(self):
        root = tempfile.mkdtemp(prefix="actorps-own-ckpt-")
        self.addCleanup(shutil.rmtree, root, True)
        first = cluster(Net())
        train(first, 0, N)
        rows_at_n = rows(actorps.torch.ShardedParameters(Net(), first.worker(0), clock=N))
        taken = first.checkpoint(root)
        self.assertEqual(taken["clock"], N)
        self.assertEqual(taken["dir"], os.path.join(root, f"ckpt-{N:012d}"))
        names = os.listdir(taken["dir"])
        for name in ("MANIFEST.json", "run.capnp", "shard-0.capnp", "shard-1.capnp"):
            self.assertIn(name, names)
        shard_bytes = sum(os.path.getsize(os.path.join(taken["dir"], f"shard-{s}.capnp"))
                          for s in range(SHARDS))
        self.assertEqual(taken["bytes"], shard_bytes)
        manifest = json.load(open(os.path.join(taken["dir"], "MANIFEST.json")))
        self.assertEqual(manifest["clock"], N)

        adapter = train(first, N, M)
        want_dense = first.snapshot()
        want_rows = rows(adapter)
        self.assertGreater(np.abs(want_rows - rows_at_n).max(), 1e-3)  # it trained on

        second = cluster(Net())
        self.assertEqual(second.restore(root), N)
        # what the restore put back: the rows at N, bit for bit
        self.assertTrue(np.array_equal(
            rows(actorps.torch.ShardedParameters(Net(), second.worker(0), clock=N)), rows_at_n))
        adapter = train(second, N, M)
        self.assertTrue(np.array_equal(second.snapshot(), want_dense))
        self.assertTrue(np.array_equal(rows(adapter), want_rows))

        # Without the restore the same M clocks end elsewhere.
        third = cluster(Net())
        adapter = train(third, 0, M)
        self.assertFalse(np.array_equal(rows(adapter), want_rows))

    def test_another_table_layout_is_refused(self):
        root = tempfile.mkdtemp(prefix="actorps-own-ckpt-")
        self.addCleanup(shutil.rmtree, root, True)
        ps = cluster(Net())
        train(ps, 0, 2)
        ps.checkpoint(root)
        other = cluster(Net(row_optimizer="sgd"))
        with self.assertRaisesRegex(actorps.Error, r"sparse table 0 is embedding \(dim 4, adagrad"):
            other.restore(root)
        with self.assertRaisesRegex(actorps.Error, "no valid checkpoint"):
            empty = tempfile.mkdtemp(prefix="actorps-own-ckpt-empty-")
            self.addCleanup(shutil.rmtree, empty, True)
            other.restore(empty)


if __name__ == "__main__":
    unittest.main()
