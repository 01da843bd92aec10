"""actorps.torch: train a torch.nn.Module through the shards, which apply the optimizer.

    import actorps, actorps.torch
    model = MyNet()
    spec = actorps.torch.model_spec(model)
    ps = actorps.LocalCluster(spec, ps=2, workers=2, mode="sync", optimizer="sgd", lr=0.1)
    shards = actorps.torch.ShardedParameters(model, ps.worker(w))  # one per worker (thread)
    for x, y in batches:
        loss = loss_fn(model(x), y)
        loss.backward()
        shards.step()    # pushes the gradient, pulls the next parameters into the model

The module's parameters become views into one flat float32 buffer, in model order, and their
.grad views into one flat gradient buffer: the pull lands in the parameters in place, and the
push reads the gradients autograd accumulated in place. Nothing is copied unless something
replaced a .grad with a tensor of its own (set_to_none, a hook): then step() copies it back
into the flat buffer and counts the bytes in `bytes_copied`.

Embeddings: actorps.torch.EmbeddingBag (embedding.py) keeps its table in a sparse table on
the shards; model_spec() declares one table per bag, ShardedParameters attaches each bag, and
step() pushes the bags' gradient rows (and pulls their prefetched rows) in the same push_pull
as the dense tensors.
"""
import math

import torch

from ._core import ModelSpec
from .embedding import EmbeddingBag, embedding_bags

__all__ = ["EmbeddingBag", "ShardedParameters", "model_spec"]


def _parameters(module):
    return [(name, p) for name, p in module.named_parameters() if p.requires_grad]


def model_spec(module, name="torch", init="fan_in"):
    """The ModelSpec of a module's trainable parameters, in named_parameters() order. init
    "fan_in": weights (2+ dimensions) start uniform in ±1/sqrt(fan in), as torch.nn.Linear's
    default bound, other parameters (biases) at 0; init "zeros": every parameter at 0. The
    shards draw these values (seeded), so every worker starts from the same parameters. Each
    EmbeddingBag inside the module adds its sparse table, in named_modules() order."""
    if init not in ("fan_in", "zeros"):
        raise ValueError(f"init: '{init}' is not one of fan_in, zeros")
    tensors = []
    for pname, p in _parameters(module):
        shape = list(p.shape) or [1]
        if init == "fan_in" and p.dim() >= 2:
            fan_in = math.prod(shape[1:])
            tensors.append((pname, shape, "uniform", 1.0 / math.sqrt(fan_in)))
        else:
            tensors.append((pname, shape))
    tables = [bag.table_spec for bag in embedding_bags(module)]
    return ModelSpec(tensors, sparse_tables=tables, name=name)


class ShardedParameters:
    """A module's parameters kept by the shards. `client` is this worker's WorkerClient (one
    per thread). Pulls the parameters of `clock` at once; each step() pushes the gradient of
    the current clock and pulls the next clock's parameters (the shards hold the pull as the
    consistency mode says), then zeroes the gradients for the next backward."""

    def __init__(self, module, client, clock=0):
        self._params = [p for _, p in _parameters(module)]
        n = sum(p.numel() for p in self._params)
        if n != client.total_floats:
            raise ValueError(f"module: {n} trainable floats, the cluster's model has "
                             f"{client.total_floats} (build the spec with model_spec(module))")
        for p in self._params:
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise ValueError(f"module: a parameter of {p.dtype} on {p.device}, expected "
                                 "float32 on the CPU")
        self.client = client
        self.clock = clock
        self.staleness = 0
        self.bytes_copied = 0  # gradient bytes step() had to copy back into the flat buffer
        self.flat = torch.empty(n, dtype=torch.float32)
        self.flat_grad = torch.zeros(n, dtype=torch.float32)
        self._grad_views = []
        offset = 0
        with torch.no_grad():
            for p in self._params:
                k = p.numel()
                p.data = self.flat[offset:offset + k].view_as(p)
                view = self.flat_grad[offset:offset + k].view_as(p)
                p.grad = view
                self._grad_views.append(view)
                offset += k
        self.staleness = client.wait(client.pull(clock, self.flat))
        self.bags = embedding_bags(module)
        for table, bag in enumerate(self.bags):
            bag.attach(self, table)
        self._scratch = None  # the dense values of a rows-only pull, never looked at

    def pull_rows(self, rows):
        """Pulls sparse rows ([(table, keys, rows_out)]) at the current clock now, for a bag's
        forward. The dense values the pull brings land in a scratch buffer: the module's own
        parameters stay those the forward has used so far."""
        if self._scratch is None:
            self._scratch = torch.empty_like(self.flat)
        self.client.wait(self.client.pull(self.clock, self._scratch, rows=rows))

    def _gather_grads(self):
        """Puts every parameter's gradient back into the flat buffer where one was replaced."""
        for p, view in zip(self._params, self._grad_views):
            if p.grad is None:  # unused in this backward, or set to None: a zero gradient
                view.zero_()
            elif p.grad.data_ptr() != view.data_ptr() or p.grad.stride() != view.stride():
                view.copy_(p.grad)
                self.bytes_copied += view.numel() * 4
            p.grad = view

    def step(self):
        """Pushes the gradient of this clock (the embedding bags' rows with it) and pulls the
        parameters of the next into the module (with the rows the bags prefetch). Returns the
        staleness of what arrived; raises actorps.Error when the shards refuse the push or a
        shard is lost."""
        self._gather_grads()
        push = [p for p in (bag.push_part() for bag in self.bags) if p is not None]
        rows = [r for r in (bag.rows_part() for bag in self.bags) if r is not None]
        ok = False
        try:
            self.staleness = self.client.wait(
                self.client.push_pull(self.clock, self.flat_grad, self.flat, push=push,
                                      rows=rows))
            ok = True
        finally:
            for bag in self.bags:
                bag.stepped(ok)
        self.clock += 1
        self.flat_grad.zero_()
        return self.staleness

    def zero_grad(self):
        """Zeroes the gradients in place (step() already does after each push)."""
        self.flat_grad.zero_()
