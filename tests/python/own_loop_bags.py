"""What the own-loop tests with torch share (test_own_loop_checkpoint.py,
test_own_loop_scale.py): a bag of embedding rows on the shards and a linear layer, and the
batches every worker trains on, the same for a worker's clock in every run."""
import torch

import actorps.torch

DIM = 4
KEYS = 40


class Net(torch.nn.Module):
    def __init__(self, row_optimizer="adagrad"):
        super().__init__()
        self.bag = actorps.torch.EmbeddingBag(DIM, mode="mean", init="uniform", scale=0.5,
                                              optimizer=row_optimizer, lr=0.3)
        self.out = torch.nn.Linear(DIM, 3)

    def forward(self, ids, offsets):
        return self.out(self.bag(ids, offsets))


def keys():
    return torch.arange(KEYS, dtype=torch.int64) * 7919 + (5 << 56)


def batch(w, clock):
    """8 bags of 1 to 4 keys and 8 labels, the same for a worker's clock in every run."""
    g = torch.Generator().manual_seed(1000 * w + clock)
    lengths = torch.randint(1, 5, (8,), generator=g)
    index = torch.randint(0, KEYS, (int(lengths.sum()),), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    return keys()[index], offsets, torch.randint(0, 3, (8,), generator=g)
