#!/usr/bin/env python3
"""pull / push_pull through the Python binding give exactly what the C++ front door computes:
the shards' sync SGD (sum of the workers' gradients in worker order, times 1/W, times lr),
redone here in float32 NumPy, for dense tensors and sparse rows."""
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402

LR = 0.25
CLOCKS = 4
WORKERS = 2


def gradient(w, clock, n):
    """Worker w's gradient at `clock`: distinct per worker, clock and value."""
    rng = np.random.default_rng(1000 * w + clock)
    return rng.standard_normal(n).astype(np.float32)


class FrontDoor(unittest.TestCase):
    def test_sync_sgd_round_trip_is_exact(self):
        spec = harness.small_spec(actorps)
        ps = actorps.LocalCluster(spec, ps=3, workers=WORKERS, mode="sync", optimizer="sgd",
                                  lr=LR, block_floats=16)
        n = spec.total_floats
        pulled = [[None] * (CLOCKS + 1) for _ in range(WORKERS)]

        def run(w):
            client = ps.worker(w)
            params = np.empty(n, np.float32)
            self.assertEqual(client.wait(client.pull(0, params)), 0)
            pulled[w][0] = params.copy()
            for c in range(CLOCKS):
                staleness = client.wait(client.push_pull(c, gradient(w, c, n), params))
                self.assertEqual(staleness, 0)  # sync: never stale
                self.assertEqual(client.newest_clock, c)
                pulled[w][c + 1] = params.copy()

        self.assertEqual(harness.run_workers(run, WORKERS), [])

        expected = pulled[0][0]
        self.assertTrue(np.array_equal(pulled[1][0], expected))
        self.assertGreater(np.abs(expected).max(), 0)  # uniform init, not zeros ...
        self.assertTrue(np.all(expected[60:] == 0))    # ... but the bias starts at 0
        inv = np.float32(1.0 / WORKERS)
        for c in range(CLOCKS):
            total = gradient(0, c, n) + gradient(1, c, n)
            expected = expected - np.float32(LR) * (total * inv)
            for w in range(WORKERS):
                np.testing.assert_array_equal(pulled[w][c + 1], expected,
                                              err_msg=f"worker {w} after clock {c}")
        np.testing.assert_array_equal(ps.snapshot(), expected)

    def test_sparse_rows_round_trip(self):
        table = actorps.SparseTable("emb", 4, optimizer="sgd", lr=0.5)
        spec = actorps.ModelSpec([("b", [3])], sparse_tables=[table])
        ps = actorps.LocalCluster(spec, ps=2, workers=1, mode="sync", optimizer="sgd", lr=0.5)
        client = ps.worker(0)
        keys = np.array([7, 1 << 40, 12345], np.uint64)
        params = np.empty(3, np.float32)
        rows = np.full((3, 4), 9.0, np.float32)
        client.wait(client.pull(0, params, rows=[(0, keys, rows)]))
        np.testing.assert_array_equal(rows, np.zeros((3, 4), np.float32))  # no row yet
        grads = np.arange(12, dtype=np.float32).reshape(3, 4)
        client.wait(client.push_pull(0, np.ones(3, np.float32), params,
                                     push=[(0, keys, grads)], rows=[(0, keys[::-1].copy(), rows)]))
        np.testing.assert_array_equal(params, np.full(3, -0.5, np.float32))
        np.testing.assert_array_equal(rows, (-0.5 * grads)[::-1])  # in the order asked


if __name__ == "__main__":
    unittest.main()
