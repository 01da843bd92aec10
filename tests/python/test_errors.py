#!/usr/bin/env python3
"""The runtime's errors arrive as actorps.Error (a RuntimeError) with the runtime's text and
the code's name: a push for a clock already pushed (refused by the shards), and a pull held by
sync past the request timeout because the other worker never pushes (naming the worker and
the clock), and a worker that is done saying so with finish()."""
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402


class Errors(unittest.TestCase):
    def test_error_is_a_runtime_error(self):
        self.assertTrue(issubclass(actorps.Error, RuntimeError))

    def test_stale_clock(self):
        spec = harness.small_spec(actorps)
        client = actorps.LocalCluster(spec, ps=2, workers=1, mode="sync", optimizer="sgd",
                                      lr=0.1).worker(0)
        params = np.empty(spec.total_floats, np.float32)
        grad = np.ones_like(params)
        client.wait(client.pull(0, params))
        client.wait(client.push_pull(0, grad, params))
        before = params.copy()
        with self.assertRaises(actorps.Error) as caught:
            client.wait(client.push_pull(0, grad, params))  # clock 0 again
        self.assertEqual(caught.exception.code, "stale_clock")
        self.assertEqual(str(caught.exception), "stale_clock: clock 0 already pushed")
        np.testing.assert_array_equal(params, before)  # nothing written
        # refused, not applied: the next clock goes on from the same values
        self.assertEqual(client.wait(client.push_pull(1, grad, params)), 0)
        np.testing.assert_allclose(params, before - np.float32(0.1), rtol=0, atol=1e-6)

    def test_request_timeout(self):
        spec = harness.small_spec(actorps)
        ps = actorps.LocalCluster(spec, ps=2, workers=2, mode="sync", optimizer="sgd",
                                  lr=0.1, timeout=0.5)
        client = ps.worker(0)  # worker 1 never pushes: sync holds clock 1's pull
        params = np.empty(spec.total_floats, np.float32)
        client.wait(client.pull(0, params))
        with self.assertRaises(actorps.Error) as caught:
            client.wait(client.push_pull(0, np.ones_like(params), params))
        self.assertEqual(caught.exception.code, "request_timeout")
        self.assertIn("request_timeout", str(caught.exception))
        self.assertIn("worker:0's push_pull for the parameters of clock 1", str(caught.exception))

    def test_uneven_split_with_finish(self):
        spec = harness.small_spec(actorps)
        ps = actorps.LocalCluster(spec, ps=2, workers=2, mode="sync", optimizer="sgd",
                                  lr=0.1, timeout=5.0)
        a, b = ps.worker(0), ps.worker(1)
        pa = np.empty(spec.total_floats, np.float32)
        pb = np.empty_like(pa)
        a.wait(a.pull(0, pa))
        b.wait(b.pull(0, pb))
        start = pa.copy()
        ones = np.ones_like(pa)
        tb = b.push_pull(0, ones * 3, pb)  # worker 1 runs one clock and is done
        self.assertEqual(a.wait(a.push_pull(0, ones, pa)), 0)
        b.wait(tb)
        b.finish()
        b.finish()  # again: nothing
        # clock 1 is worker 0's alone: answered without waiting for worker 1
        self.assertEqual(a.wait(a.push_pull(1, ones, pa)), 0)
        # clock 0: the mean of 1 and 3; clock 1: 1 alone (SGD at 0.1)
        np.testing.assert_allclose(pa, start - np.float32(0.1 * 2 + 0.1 * 1), rtol=0, atol=1e-6)
        with self.assertRaises(actorps.Error) as caught:
            b.wait(b.pull(2, pb))
        self.assertIn("worker 1 has finished", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
