"""actorps.torch.EmbeddingBag: an embedding table that lives in a sparse table on the shards.

    emb = actorps.torch.EmbeddingBag(16, mode="sum", init="uniform", scale=0.05,
                                     optimizer="adagrad", lr=0.05)
    model = MyNet(emb, ...)                       # any module holding it
    spec = actorps.torch.model_spec(model)        # its dense tensors and one table per bag
    ps = actorps.LocalCluster(spec, ps=2, workers=2, mode="sync", optimizer="sgd", lr=0.1)
    shards = actorps.torch.ShardedParameters(model, ps.worker(w))
    for ids, offsets, y in batches:
        loss_fn(model(ids, offsets), y).backward()
        shards.step()            # one push_pull: the dense gradient and the bags' rows

Keys are int64 tensors (read as the same 64 bits unsigned: PyTorch has no uint64), any value;
there is no num_embeddings. Per batch a bag takes the batch's distinct ids (torch.unique),
pulls those rows in place into a (u, dim) tensor, and gathers and reduces from it with
autograd, like torch.nn.functional.embedding_bag; step() pushes the rows' (u, dim) gradient
under the same keys with the dense gradient. A key no push has reached reads as the values
its row will start with (seeded by the key); the shard creates the row, and its optimizer
state, on the first push. The shards apply the table's own optimizer to each pushed row: in
sync mode, the mean over the workers that pushed the clock — the sum of their gradients of
the row divided by their number, a worker that did not use the row counting as a zero
gradient, as for the dense tensors; in ssp and async each push at once, scaled by
1 / live workers.

The rows of a batch are pulled by the first forward that needs them: an extra round trip per
batch (which also pulls the dense parameters, into a scratch buffer so that the module's own
stay as the forward used them). prefetch(next ids) before step() names the next batch's ids
instead, and step() pulls their rows with the dense parameters in its one push_pull.
"""
import numpy as np
import torch

from ._core import SparseTable


def _ids_and_offsets(input, offsets):
    """Checks the input as torch.nn.EmbeddingBag takes it: 1-D ids with offsets (bag starts),
    or 2-D (bags, ids per bag) without."""
    if not isinstance(input, torch.Tensor) or input.dtype not in (torch.int64, torch.int32):
        raise ValueError("input: expected an int64 (or int32) tensor of ids")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("offsets: given with a 2-D input (each row is a bag)")
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets: required with a 1-D input (where each bag starts)")
        if offsets.dim() != 1:
            raise ValueError("offsets: expected a 1-D tensor")
    else:
        raise ValueError(f"input: {input.dim()}-D, expected 1-D ids with offsets or 2-D bags")
    return input.to(torch.int64), offsets


class EmbeddingBag(torch.nn.Module):
    """An EmbeddingBag (mode "sum" or "mean") over the sparse table this module declares:
    rows of `dim` floats starting as `init` ("zeros", "uniform" in ±scale, "normal" with
    standard deviation scale), trained by the shards with `optimizer` ("sgd", "adagrad",
    "adam", "ftrl"; lr and initial_accumulator None: their defaults). One training
    forward per step(); forwards under torch.no_grad() (evaluation) pull the rows they need
    and push nothing."""

    def __init__(self, dim, mode="mean", init="uniform", scale=0.05, optimizer="adagrad",
                 lr=None, initial_accumulator=None, name="embedding"):
        super().__init__()
        if mode not in ("sum", "mean"):
            raise ValueError(f"mode: '{mode}' is not one of sum, mean")
        self.dim = dim
        self.mode = mode
        # Kept as plain values (a module must survive copy.deepcopy); checked here at once.
        self._table_args = dict(name=name, dim=dim, init=init, scale=scale,
                                optimizer=optimizer, lr=lr,
                                initial_accumulator=initial_accumulator)
        SparseTable(**self._table_args)  # a bad setting raises ValueError here
        self.table = None        # its index in the model's sparse tables, once attached
        self._shards = None      # the ShardedParameters that pulls and pushes for it
        self._pushing = None     # (keys, rows) of this step's training forward
        self._prefetching = None  # (keys, rows) step() pulls for the next batch
        self._prefetched = None   # (keys, rows) the last step() pulled
        self.pulls = 0            # rows pulled by a forward (not prefetched): round trips
        self.bytes_copied = 0     # gradient bytes step() had to copy (a non-contiguous grad)
        # The runtime-owned loop (actorps.torch.train) instead: a forward that only records
        # the ids it is given, or rows the runtime pulled for them.
        self._recorded = None     # [ids, ...] of the forwards since record()
        self._given = None        # [values (u, dim), inverse, ids used so far]
        self._local = None        # (keys uint64 ascending, rows + a zero row): load_rows()

    @property
    def table_spec(self):
        """The actorps.SparseTable this bag declares (model_spec() collects it)."""
        return SparseTable(**self._table_args)

    def extra_repr(self):
        return f"dim={self.dim}, mode={self.mode}, table={self.table}"

    def attach(self, shards, table):
        """Called by ShardedParameters: this bag's table is `table` of the cluster's model."""
        self._shards = shards
        self.table = table

    def _check_attached(self):
        if self._shards is None:
            raise RuntimeError("EmbeddingBag: not attached to the shards; wrap the module in "
                               "actorps.torch.ShardedParameters first")

    @staticmethod
    def _keys_of(input):
        return torch.unique(input.reshape(-1), sorted=True)

    def prefetch(self, input):
        """Names the ids of the next batch (its input: 1-D or 2-D ids): the next step() pulls
        their rows with the dense parameters, and the next forward whose distinct ids are these
        uses them without a round trip of its own."""
        self._check_attached()
        keys = self._keys_of(input.to(torch.int64))
        self._prefetching = (keys, torch.empty(keys.numel(), self.dim, dtype=torch.float32))

    def _rows_for(self, keys):
        """The rows of `keys` (distinct, ascending): the prefetched ones when they match (an
        evaluation forward in between leaves them), else pulled now at the current clock."""
        ready = self._prefetched
        if ready is not None and torch.equal(ready[0], keys):
            self._prefetched = None  # once: a later batch of this clock pulls its own
            return ready[1]
        rows = torch.empty(keys.numel(), self.dim, dtype=torch.float32)
        self._shards.pull_rows([(self.table, keys, rows)])
        self.pulls += 1
        return rows

    def forward(self, input, offsets=None, per_sample_weights=None):
        ids, offsets = _ids_and_offsets(input, offsets)
        if self._recorded is not None:
            self._recorded.append(ids.reshape(-1))
            bags = ids.shape[0] if ids.dim() == 2 else offsets.numel()
            return torch.zeros(bags, self.dim, dtype=torch.float32)
        if self._given is not None:
            return self._forward_given(ids, offsets, per_sample_weights)
        if self._local is not None and self._shards is None:
            return self._forward_local(ids, offsets, per_sample_weights)
        self._check_attached()
        keys, inverse = torch.unique(ids, sorted=True, return_inverse=True)
        rows = self._rows_for(keys)
        if torch.is_grad_enabled():
            if self._pushing is not None:
                raise RuntimeError("EmbeddingBag: a second training forward before step(); "
                                   "one batch per step (evaluate under torch.no_grad())")
            rows.requires_grad_(True)
            self._pushing = (keys, rows)
        return torch.nn.functional.embedding_bag(inverse, rows, offsets, mode=self.mode,
                                                 per_sample_weights=per_sample_weights)

    # --- what ShardedParameters.step() asks of a bag ---------------------------------------

    def push_part(self):
        """(table, keys, grads) of this step's batch, or None (no training forward, or its
        rows got no gradient). The gradient autograd wrote is pushed as it lies."""
        if self._pushing is None:
            return None
        keys, rows = self._pushing
        grad = rows.grad
        if grad is None:
            return None
        if not grad.is_contiguous():
            grad = grad.contiguous()
            self.bytes_copied += grad.numel() * 4
        return (self.table, keys, grad)

    def rows_part(self):
        """(table, keys, rows_out) for the next batch's prefetched ids, or None."""
        if self._prefetching is None:
            return None
        keys, rows = self._prefetching
        return (self.table, keys, rows)

    def stepped(self, ok):
        """After step()'s wait: the pushed rows are done with, the prefetched rows ready (not
        when the step failed: nothing was written into them)."""
        self._pushing = None
        self._prefetched = self._prefetching if ok else None
        self._prefetching = None


    # --- what actorps.torch.train's loop asks of a bag --------------------------------------

    def record(self):
        """From now on a forward only notes its ids (and returns zeros) until recorded()."""
        self._recorded = []

    def recorded(self):
        """The ids of the forwards since record(), in order (int64), and back to normal."""
        ids, self._recorded = self._recorded, None
        return torch.cat(ids) if ids else torch.empty(0, dtype=torch.int64)

    def give(self, values, inverse):
        """The rows the runtime pulled for the ids recorded: values (distinct keys x dim, a
        tensor that receives their gradient) and, for each id in recorded order, its row."""
        self._given = [values, inverse, 0]

    def taken(self):
        """Done with the given rows; how many ids the forwards used."""
        used = self._given[2] if self._given is not None else 0
        self._given = None
        return used

    def _forward_given(self, ids, offsets, per_sample_weights):
        values, inverse, used = self._given
        k = ids.numel()
        if used + k > inverse.numel():
            raise RuntimeError(f"EmbeddingBag '{self._table_args['name']}': the forward reads "
                               f"more ids ({used + k}) than were recorded for it "
                               f"({inverse.numel()}): is the module's forward deterministic?")
        self._given[2] = used + k
        rows = inverse[used:used + k].reshape(ids.shape)
        return torch.nn.functional.embedding_bag(rows, values, offsets, mode=self.mode,
                                                 per_sample_weights=per_sample_weights)


    # --- a trained table in this process (actorps.torch.load_export) ------------------------

    def load_rows(self, keys, values):
        """Serves forwards from these rows in this process from now on (keys uint64 ascending,
        values (keys, dim)): an id without a row reads zeros. For inference after training."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        values = torch.as_tensor(np.asarray(values, dtype=np.float32))
        if values.dim() != 2 or values.shape != (len(keys), self.dim):
            raise ValueError(f"EmbeddingBag '{self._table_args['name']}': {tuple(values.shape)} "
                             f"rows for {len(keys)} keys of dim {self.dim}")
        if len(keys) > 1 and not bool((keys[1:] > keys[:-1]).all()):
            raise ValueError(f"EmbeddingBag '{self._table_args['name']}': keys not ascending")
        self._local = (keys, torch.cat([values, torch.zeros(1, self.dim)]))

    def _forward_local(self, ids, offsets, per_sample_weights):
        keys, rows = self._local
        wanted = ids.reshape(-1).numpy().view(np.uint64)
        at = np.searchsorted(keys, wanted)
        found = at < len(keys)
        found[found] = keys[at[found]] == wanted[found]
        index = np.where(found, at, len(keys))  # the zero row
        index = torch.from_numpy(index.astype(np.int64)).reshape(ids.shape)
        return torch.nn.functional.embedding_bag(index, rows, offsets, mode=self.mode,
                                                 per_sample_weights=per_sample_weights)


def embedding_bags(module):
    """The EmbeddingBag modules inside `module`, in named_modules() order: the order of the
    model's sparse tables."""
    return [m for m in module.modules() if isinstance(m, EmbeddingBag)]
