#!/usr/bin/env python3
"""actorps.torch in sync mode is exact: 2 workers (threads), each with its own copy of an MLP
and its own minibatches, trained for 5 clocks through the shards with `loss.backward();
shards.step()`, end with the parameters (max abs diff ≤ 1e-5) of one PyTorch process that
applies torch.optim.SGD at the same lr to the mean of the same 2 minibatch gradients. The
adapter copies no gradient byte on the way (its counter stays 0)."""
import copy
import unittest

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402
import actorps.torch  # noqa: E402

WORKERS = 2
CLOCKS = 5
LR = 0.1
BATCH = 16


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def batch(w, clock):
    g = torch.Generator().manual_seed(100 * w + clock)
    return torch.randn(BATCH, 20, generator=g), torch.randint(0, 3, (BATCH,), generator=g)


def loss_of(model, w, clock):
    x, y = batch(w, clock)
    return torch.nn.functional.cross_entropy(model(x), y)


class TorchAdapter(unittest.TestCase):
    def test_sync_equals_one_process_sgd(self):
        torch.manual_seed(0)
        template = make_model()
        spec = actorps.torch.model_spec(template)
        ps = actorps.LocalCluster(spec, ps=2, workers=WORKERS, mode="sync", optimizer="sgd",
                                  lr=LR, block_floats=128)
        replicas = [copy.deepcopy(template) for _ in range(WORKERS)]
        adapters = [actorps.torch.ShardedParameters(m, ps.worker(w)) for w, m in enumerate(replicas)]
        # Both start from the shards' initial values, not from PyTorch's own initialisation.
        start = copy.deepcopy(replicas[0])
        initial = [p.detach().clone() for p in start.parameters()]
        for p, q in zip(replicas[0].parameters(), template.parameters()):
            self.assertFalse(torch.equal(p, q))
        self.assertTrue(all(torch.equal(p, q) for p, q in
                            zip(replicas[0].parameters(), replicas[1].parameters())))

        def train(w):
            for clock in range(CLOCKS):
                loss_of(replicas[w], w, clock).backward()
                self.assertEqual(adapters[w].step(), 0)

        self.assertEqual(harness.run_workers(train, WORKERS), [])

        reference = start
        sgd = torch.optim.SGD(reference.parameters(), lr=LR)
        for clock in range(CLOCKS):
            grads = []
            for w in range(WORKERS):
                reference.zero_grad()
                loss_of(reference, w, clock).backward()
                grads.append([p.grad.clone() for p in reference.parameters()])
            for p, g0, g1 in zip(reference.parameters(), *grads):
                p.grad = (g0 + g1) / WORKERS
            sgd.step()

        for w in range(WORKERS):
            diff = max((p - q).abs().max().item() for p, q in
                       zip(replicas[w].parameters(), reference.parameters()))
            self.assertLessEqual(diff, 1e-5, f"worker {w}")
            self.assertEqual(adapters[w].clock, CLOCKS)
            self.assertEqual(adapters[w].bytes_copied, 0)
        moved = max((p - q).abs().max().item() for p, q in
                    zip(reference.parameters(), initial))
        self.assertGreater(moved, 1e-3)  # it did train
        np.testing.assert_array_equal(ps.snapshot(), adapters[0].flat.numpy())
        self.assertEqual(actorps.bytes_copied(), 0)

    def test_parameters_are_views_into_one_buffer(self):
        model = make_model()
        ps = actorps.LocalCluster(actorps.torch.model_spec(model), ps=1, workers=1,
                                  mode="sync", optimizer="sgd", lr=0.5)
        shards = actorps.torch.ShardedParameters(model, ps.worker(0))
        base = shards.flat.data_ptr()
        offset = 0
        for p in model.parameters():
            self.assertEqual(p.data_ptr(), base + 4 * offset)
            self.assertEqual(p.grad.data_ptr(), shards.flat_grad.data_ptr() + 4 * offset)
            offset += p.numel()
        self.assertEqual(offset, shards.flat.numel())
        # A gradient replaced by a tensor of its own is copied back, and counted.
        before = [p.detach().clone() for p in model.parameters()]
        first = next(model.parameters())
        first.grad = torch.ones_like(first)
        shards.step()
        self.assertEqual(shards.bytes_copied, 4 * first.numel())
        self.assertTrue(torch.equal(first, before[0] - 0.5))
        for p, b in list(zip(model.parameters(), before))[1:]:
            self.assertTrue(torch.equal(p, b))  # their gradients were 0

    def test_wrong_module_is_refused(self):
        ps = actorps.LocalCluster(actorps.torch.model_spec(make_model()), ps=1, workers=1)
        with self.assertRaisesRegex(ValueError, r"^module: 20 trainable floats, the cluster's"):
            actorps.torch.ShardedParameters(torch.nn.Linear(3, 5), ps.worker(0))


if __name__ == "__main__":
    unittest.main()
