#!/usr/bin/env python3
"""actorps.torch.EmbeddingBag, its table on the shards:
- its forward (sum, mean, 1-D ids with offsets, 2-D bags, per-sample weights) and its rows'
  gradient equal torch.nn.EmbeddingBag's over the same rows;
- sync mode is exact: 2 workers (threads) for 5 clocks, each with its own bags of ids drawn
  from 30 keys (64-bit, negative ones included), end with the rows and the dense parameters
  (max abs diff ≤ 1e-5) of one PyTorch process applying SGD to the mean of the same 2
  gradients, rows untouched by a worker counting as a zero gradient (what the shard does);
  one worker prefetches its next batch (an evaluation forward in between keeps those rows),
  the other pulls per batch;
- no byte of rows or gradients is copied on the way;
- misuse is refused with a message naming it."""
import copy
import unittest

import harness

np, torch = harness.require("numpy", "torch")
import actorps  # noqa: E402
import actorps.torch  # noqa: E402

WORKERS = 2
CLOCKS = 5
DIM = 4
KEYS = 30
LR_DENSE = 0.2
LR_ROWS = 0.5


def universe():
    """30 distinct 64-bit keys, sorted as int64 (so the negative ones, above 2^63 unsigned,
    come first), with Criteo's field-in-the-top-byte keys among them."""
    g = torch.Generator().manual_seed(7)
    keys = torch.randint(-2**62, 2**62, (KEYS - 2,), generator=g, dtype=torch.int64)
    keys = torch.cat([keys, torch.tensor([25 << 56, (3 << 56) | 12345])])
    return torch.unique(keys)


class Net(torch.nn.Module):
    def __init__(self, mode="mean"):
        super().__init__()
        self.bag = actorps.torch.EmbeddingBag(DIM, mode=mode, init="uniform", scale=0.5,
                                              optimizer="sgd", lr=LR_ROWS)
        self.out = torch.nn.Linear(DIM, 3)

    def forward(self, ids, offsets):
        return self.out(self.bag(ids, offsets))


def batch(w, clock):
    """8 bags of 1 to 4 key indices (repeats welcome) and 8 labels."""
    g = torch.Generator().manual_seed(100 * w + clock)
    lengths = torch.randint(1, 5, (8,), generator=g)
    index = torch.randint(0, KEYS, (int(lengths.sum()),), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    return index, offsets, torch.randint(0, 3, (8,), generator=g)


def all_rows(shards, keys):
    rows = torch.empty(keys.numel(), DIM)
    shards.pull_rows([(0, keys, rows)])
    return rows


class EmbeddingBagTest(unittest.TestCase):
    def cluster(self, model, workers=1):
        spec = actorps.torch.model_spec(model)
        return actorps.LocalCluster(spec, ps=2, workers=workers, mode="sync", optimizer="sgd",
                                    lr=LR_DENSE, block_floats=8)

    def test_spec_declares_one_table_per_bag(self):
        spec = actorps.torch.model_spec(Net())
        self.assertEqual([(t.name, t.dim) for t in spec.sparse_tables], [("embedding", DIM)])
        self.assertEqual(spec.total_floats, DIM * 3 + 3)

    def test_forward_and_gradient_equal_torch_embedding_bag(self):
        keys = universe()
        for mode in ("sum", "mean"):
            model = Net(mode)
            ps = self.cluster(model)
            shards = actorps.torch.ShardedParameters(model, ps.worker(0))
            rows = all_rows(shards, keys)
            self.assertGreater(rows.abs().max().item(), 0.1)  # uniform in ±0.5, not zeros
            self.assertLessEqual(rows.abs().max().item(), 0.5)
            ref = torch.nn.EmbeddingBag.from_pretrained(rows.clone(), freeze=False, mode=mode)
            index, offsets, _ = batch(0, 0)
            bags2d = torch.randint(0, KEYS, (5, 3), generator=torch.Generator().manual_seed(1))
            weights = torch.rand(index.numel(), generator=torch.Generator().manual_seed(2))
            with torch.no_grad():
                torch.testing.assert_close(model.bag(keys[index], offsets), ref(index, offsets),
                                           rtol=0, atol=0)
                torch.testing.assert_close(model.bag(keys[bags2d]), ref(bags2d), rtol=0, atol=0)
                if mode == "sum":
                    torch.testing.assert_close(
                        model.bag(keys[index], offsets, per_sample_weights=weights),
                        ref(index, offsets, per_sample_weights=weights), rtol=0, atol=0)
            # The gradient of the batch's distinct rows is the reference's, row for row.
            upstream = torch.randn(len(offsets), DIM, generator=torch.Generator().manual_seed(3))
            (model.bag(keys[index], offsets) * upstream).sum().backward()
            (ref(index, offsets) * upstream).sum().backward()
            table, pushed_keys, grad = model.bag.push_part()
            used = torch.unique(index)
            self.assertEqual(table, 0)
            self.assertTrue(torch.equal(pushed_keys, keys[used]))
            torch.testing.assert_close(grad, ref.weight.grad[used], rtol=0, atol=1e-7)

    def test_sync_equals_one_process_sgd_on_the_mean_gradient(self):
        keys = universe()
        torch.manual_seed(0)
        template = Net()
        ps = self.cluster(template, WORKERS)
        replicas = [copy.deepcopy(template) for _ in range(WORKERS)]
        adapters = [actorps.torch.ShardedParameters(m, ps.worker(w))
                    for w, m in enumerate(replicas)]
        start_rows = all_rows(adapters[0], keys)
        reference = copy.deepcopy(replicas[0].out)  # the shards' initial dense values
        table = torch.nn.EmbeddingBag.from_pretrained(start_rows.clone(), freeze=False,
                                                      mode="mean")

        def train(w):
            model, shards = replicas[w], adapters[w]
            for clock in range(CLOCKS):
                index, offsets, y = batch(w, clock)
                loss = torch.nn.functional.cross_entropy(model(keys[index], offsets), y)
                loss.backward()
                if w == 0 and clock + 1 < CLOCKS:
                    model.bag.prefetch(keys[batch(w, clock + 1)[0]])
                self.assertEqual(shards.step(), 0)
                if w == 0:  # an evaluation forward of other ids leaves the prefetched rows
                    with torch.no_grad():
                        other, other_offsets, _ = batch(1, clock)
                        model(keys[other], other_offsets)

        self.assertEqual(harness.run_workers(train, WORKERS), [])

        sgd = torch.optim.SGD([{"params": reference.parameters(), "lr": LR_DENSE},
                               {"params": table.parameters(), "lr": LR_ROWS}])
        params = list(reference.parameters()) + [table.weight]
        for clock in range(CLOCKS):
            grads = []
            for w in range(WORKERS):
                sgd.zero_grad()
                index, offsets, y = batch(w, clock)
                torch.nn.functional.cross_entropy(reference(table(index, offsets)), y).backward()
                grads.append([p.grad.clone() for p in params])
            for p, *g in zip(params, *grads):
                p.grad = sum(g) / WORKERS
            sgd.step()

        final_rows = all_rows(adapters[0], keys)
        self.assertLessEqual((final_rows - table.weight).abs().max().item(), 1e-5)
        self.assertGreater((final_rows - start_rows).abs().max().item(), 1e-2)  # it trained
        for w in range(WORKERS):
            diff = max((p - q).abs().max().item() for p, q in
                       zip(replicas[w].out.parameters(), reference.parameters()))
            self.assertLessEqual(diff, 1e-5, f"worker {w}")
            self.assertEqual(adapters[w].bytes_copied, 0)
            self.assertEqual(replicas[w].bag.bytes_copied, 0)
        # Worker 0 prefetched every batch after its first (its evaluations pulled their own);
        # worker 1 pulled each batch in its forward.
        self.assertEqual(replicas[0].bag.pulls, 1 + CLOCKS)
        self.assertEqual(replicas[1].bag.pulls, CLOCKS)
        self.assertEqual(actorps.bytes_copied(), 0)

    def test_misuse_is_refused(self):
        loose = actorps.torch.EmbeddingBag(DIM)
        with self.assertRaisesRegex(RuntimeError, "not attached to the shards"):
            loose(torch.tensor([[1, 2]]))
        model = Net()
        ps = self.cluster(model)
        actorps.torch.ShardedParameters(model, ps.worker(0))
        with self.assertRaisesRegex(ValueError, r"^offsets: required with a 1-D input"):
            model.bag(torch.tensor([1, 2]))
        with self.assertRaisesRegex(ValueError, r"^input: expected an int64"):
            model.bag(torch.tensor([[1.0, 2.0]]))
        model.bag(torch.tensor([[1, 2]]))
        with self.assertRaisesRegex(RuntimeError, "a second training forward before step"):
            model.bag(torch.tensor([[3]]))
        with self.assertRaisesRegex(ValueError, r"^mode: 'max' is not one of sum, mean"):
            actorps.torch.EmbeddingBag(DIM, mode="max")


if __name__ == "__main__":
    unittest.main()
