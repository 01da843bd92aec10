#!/usr/bin/env python3
"""The binding uses the caller's arrays in place: the shards' values land at the addresses of
the array given (a view into a larger buffer gets exactly its slice, the sentinels around it
stay), a torch tensor keeps its data_ptr, no byte is copied by the binding (its counter stays
0), and a ticket holds its arrays until waited, so dropping them early frees nothing."""
import gc
import unittest
import weakref

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402


class InPlace(unittest.TestCase):
    def setUp(self):
        self.spec = harness.small_spec(actorps)
        self.n = self.spec.total_floats
        self.ps = actorps.LocalCluster(self.spec, ps=2, workers=1, mode="sync", optimizer="sgd",
                                       lr=0.5)
        self.client = self.ps.worker(0)

    def test_numpy_view_is_written_where_it_lies(self):
        big = np.full(self.n + 8, -7.0, np.float32)
        out = big[4:4 + self.n]  # a view: its own data pointer, inside big
        address = out.__array_interface__["data"][0]
        self.client.wait(self.client.pull(0, out))
        self.assertEqual(out.__array_interface__["data"][0], address)
        snap = self.ps.snapshot()
        np.testing.assert_array_equal(big[4:4 + self.n], snap)  # written through the view
        np.testing.assert_array_equal(big[:4], np.full(4, -7.0, np.float32))
        np.testing.assert_array_equal(big[-4:], np.full(4, -7.0, np.float32))
        grad = np.ones(self.n, np.float32)
        self.client.wait(self.client.push_pull(0, grad, out))
        np.testing.assert_array_equal(big[4:4 + self.n], snap - np.float32(0.5))
        self.assertTrue(np.shares_memory(out, big))
        self.assertEqual(actorps.bytes_copied(), 0)

    def test_torch_tensor_keeps_its_storage(self):
        out = torch.empty(self.n, dtype=torch.float32)
        grad = torch.ones(self.n, dtype=torch.float32)
        pointer = out.data_ptr()
        self.client.wait(self.client.pull(0, out))
        first = self.ps.snapshot()
        self.assertEqual(out.data_ptr(), pointer)
        np.testing.assert_array_equal(out.numpy(), first)
        view = out.numpy()  # shares memory with the tensor: the next pull shows there too
        self.client.wait(self.client.push_pull(0, grad, out))
        np.testing.assert_array_equal(view, first - np.float32(0.5))
        self.assertEqual(out.data_ptr(), pointer)
        self.assertEqual(actorps.bytes_copied(), 0)

    def test_torch_refused_tensors(self):
        out = torch.empty(self.n, dtype=torch.float32)
        with self.assertRaisesRegex(ValueError, r"^out: dtype torch.float64, expected float32"):
            self.client.pull(0, torch.empty(self.n, dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, r"^out: not contiguous"):
            self.client.pull(0, torch.empty(self.n, 2)[:, 0])
        with self.assertRaisesRegex(ValueError, rf"^grad: expected {self.n} values"):
            self.client.push_pull(0, torch.ones(3), out)

    def test_torch_int64_keys(self):
        spec = actorps.ModelSpec([("b", [1])],
                                 sparse_tables=[actorps.SparseTable("t", 2, optimizer="sgd", lr=1.0)])
        client = actorps.LocalCluster(spec, ps=2, workers=1, mode="sync", optimizer="sgd",
                                      lr=1.0).worker(0)
        keys = torch.tensor([3, 1 << 50], dtype=torch.int64)
        out = torch.empty(1)
        rows = torch.empty(2, 2)
        client.wait(client.pull(0, out))
        client.wait(client.push_pull(0, torch.zeros(1), out,
                                     push=[(0, keys, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))],
                                     rows=[(0, keys, rows)]))
        self.assertEqual(rows.tolist(), [[-1.0, -2.0], [-3.0, -4.0]])

    def test_ticket_holds_its_arrays_until_waited(self):
        out = np.empty(self.n, np.float32)
        grad = np.ones(self.n, np.float32)
        self.client.wait(self.client.pull(0, out))
        alive = [weakref.ref(grad), weakref.ref(out)]
        ticket = self.client.push_pull(0, grad, out)
        del grad, out
        gc.collect()
        self.assertTrue(all(ref() is not None for ref in alive))  # held by the ticket
        self.assertEqual(self.client.pending, 1)
        self.client.wait(ticket)
        self.assertEqual(self.client.pending, 0)
        gc.collect()
        self.assertTrue(all(ref() is None for ref in alive))  # released once waited


if __name__ == "__main__":
    unittest.main()
