#!/usr/bin/env python3
"""Bad arguments raise ValueError naming the argument and what was expected, before anything
reaches the shards; bad options of a cluster likewise."""
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402


class Arguments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec = harness.small_spec(actorps)
        cls.ps = actorps.LocalCluster(cls.spec, ps=2, workers=1, optimizer="sgd", lr=0.1)
        cls.client = cls.ps.worker(0)
        cls.n = cls.spec.total_floats

    def refused(self, pattern, call):
        with self.assertRaisesRegex(ValueError, pattern):
            call()
        self.assertEqual(self.client.pending, 0)  # nothing was submitted

    def test_wrong_dtype(self):
        self.refused(r"^out: .*'d'.*expected float32",
                     lambda: self.client.pull(0, np.empty(self.n, np.float64)))
        self.refused(r"^grad: .*expected float32",
                     lambda: self.client.push_pull(0, np.zeros(self.n, np.int32),
                                                   np.empty(self.n, np.float32)))

    def test_wrong_length(self):
        self.refused(rf"^out: expected {self.n} values \(the model's total_floats\), got {self.n - 1}$",
                     lambda: self.client.pull(0, np.empty(self.n - 1, np.float32)))
        self.refused(rf"^grad: expected {self.n} values .*got {self.n + 1}$",
                     lambda: self.client.push_pull(0, np.zeros(self.n + 1, np.float32),
                                                   np.empty(self.n, np.float32)))

    def test_not_contiguous(self):
        strided = np.empty(2 * self.n, np.float32)[::2]
        self.refused(r"^out: not C-contiguous", lambda: self.client.pull(0, strided))
        column = np.empty((self.n, 2), np.float32)[:, 0]
        self.refused(r"^grad: not C-contiguous",
                     lambda: self.client.push_pull(0, column, np.empty(self.n, np.float32)))

    def test_read_only_output(self):
        frozen = np.empty(self.n, np.float32)
        frozen.flags.writeable = False
        self.refused(r"^out: not a writable buffer", lambda: self.client.pull(0, frozen))

    def test_not_an_array(self):
        self.refused(r"^out: list, expected a NumPy array or a PyTorch CPU tensor",
                     lambda: self.client.pull(0, [0.0] * self.n))
        self.refused(r"^out: None", lambda: self.client.pull(0, None))

    def test_sparse_arguments(self):
        out = np.empty(self.n, np.float32)
        self.refused(r"^rows\[0\]: table 0, the model has 0 sparse tables",
                     lambda: self.client.pull(0, out, rows=[(0, np.array([1], np.uint64),
                                                             np.empty(4, np.float32))]))
        self.refused(r"^rows\[0\]: expected \(table, keys, rows_out\)",
                     lambda: self.client.pull(0, out, rows=[(0, np.array([1], np.uint64))]))

    def test_sparse_keys_and_rows(self):
        spec = actorps.ModelSpec([("b", [2])], sparse_tables=[actorps.SparseTable("t", 3)])
        client = actorps.LocalCluster(spec, ps=1, workers=1).worker(0)
        out = np.empty(2, np.float32)
        keys = np.array([1, 2], np.uint64)
        with self.assertRaisesRegex(ValueError, r"^rows\[0\] keys: .*expected uint64 or int64"):
            client.pull(0, out, rows=[(0, keys.astype(np.float64), np.empty(6, np.float32))])
        with self.assertRaisesRegex(ValueError,
                                    r"^rows\[0\] rows_out: expected 6 values \(2 keys x dim 3\), got 5"):
            client.pull(0, out, rows=[(0, keys, np.empty(5, np.float32))])
        with self.assertRaisesRegex(ValueError, r"^push\[0\] grads: expected 6 values"):
            client.push_pull(0, out.copy(), out, push=[(0, keys, np.empty(7, np.float32))])

    def test_unknown_ticket(self):
        with self.assertRaisesRegex(ValueError, r"^ticket: 999 is unknown or already waited"):
            self.client.wait(999)
        t = self.client.pull(0, np.empty(self.n, np.float32))
        self.client.wait(t)
        with self.assertRaisesRegex(ValueError, rf"^ticket: {t} is unknown or already waited"):
            self.client.wait(t)

    def test_cluster_options(self):
        spec = self.spec
        cases = [
            (dict(mode="bsp"), r"^mode: 'bsp' is not one of sync, ssp, async"),
            (dict(mode="sync", staleness=2), r"^staleness: given with mode='sync'"),
            (dict(mode="ssp", staleness=-1), r"^staleness: negative"),
            (dict(optimizer="lamb"), r"^optimizer: 'lamb' is not one of sgd, momentum"),
            (dict(lr=float("nan")), r"^lr: must be"),
            (dict(lr=0.0), r"^lr: must be > 0 and finite \(None: the optimizer's default\)"),
            (dict(lr=-0.1), r"^lr: must be > 0"),
            (dict(schedule="step"), r"^schedule: 'step'"),
            (dict(timeout=0), r"^timeout: must be > 0"),
            (dict(ps=0), r"at least one shard"),
        ]
        for kwargs, pattern in cases:
            with self.subTest(kwargs=kwargs), self.assertRaisesRegex(ValueError, pattern):
                actorps.LocalCluster(spec, **kwargs)
        with self.assertRaisesRegex(ValueError, r"outside the cluster's 1 workers"):
            self.ps.worker(1)
        # lr None (the default) is the optimizer's own: SGD's 0.1 moves a parameter by 0.1
        # for a gradient of 1
        one = actorps.ModelSpec([("w", [1])])
        for lr, step in [(None, 0.1), (0.5, 0.5)]:
            with self.subTest(lr=lr):
                w = actorps.LocalCluster(one, ps=1, workers=1, mode="sync", optimizer="sgd",
                                         lr=lr).worker(0)
                params = np.zeros(1, np.float32)
                w.wait(w.pull(0, params))
                before = params.copy()
                w.wait(w.push_pull(0, np.ones(1, np.float32), params))
                np.testing.assert_allclose(before - params, [step], rtol=1e-6)
        with self.assertRaisesRegex(ValueError, r"^lr: must be > 0"):
            actorps.SparseTable("t", 4, lr=0.0)

    def test_model_spec(self):
        with self.assertRaisesRegex(ValueError, r"^ModelSpec: "):
            actorps.ModelSpec([("w", [3]), ("w", [4])])  # a name twice
        with self.assertRaisesRegex(ValueError, r"^tensors\[0\] init: 'normal' is not one of"):
            actorps.ModelSpec([("w", [3], "normal", 1.0)])
        with self.assertRaisesRegex(ValueError, r"^tensors\[1\]: expected \(name, shape\)"):
            actorps.ModelSpec([("w", [3]), ("b",)])
        with self.assertRaisesRegex(ValueError, r"^SparseTable t: "):
            actorps.SparseTable("t", 0)
        with self.assertRaisesRegex(ValueError, r"^SparseTable t: admission_memory needs "
                                                r"admit_after in \[2, 255\], got 0"):
            actorps.SparseTable("t", 3, admission_memory=4096)
        with self.assertRaisesRegex(ValueError, r"admission_memory must be at least 1024 bytes"):
            actorps.SparseTable("t", 3, admit_after=5, admission_memory=100)
        self.assertEqual(actorps.SparseTable("t", 3, admit_after=5, admission_memory=4096).dim, 3)
        self.assertEqual(self.spec.total_floats, 70)
        self.assertEqual(self.spec.tensors, [("w", [6, 10]), ("b", [10])])

    def test_task_cluster_config(self):
        with self.assertRaisesRegex(ValueError, r"TF_CONFIG"):
            actorps.TaskCluster(self.spec, "{not json")


if __name__ == "__main__":
    unittest.main()
