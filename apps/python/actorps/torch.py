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
import copy
import math
import os
import threading

import numpy as np
import torch

from ._core import ModelSpec, read_export
from ._core import train as _train
from .embedding import EmbeddingBag, embedding_bags

__all__ = ["EmbeddingBag", "ShardedParameters", "load_export", "model_spec", "train"]


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


def _flat_views(params):
    """Makes each parameter (float32 on the CPU) a view into one flat buffer and its .grad a
    view into another: (flat, flat_grad, grad_views), in parameter order."""
    for p in params:
        if p.dtype != torch.float32 or p.device.type != "cpu":
            raise ValueError(f"module: a parameter of {p.dtype} on {p.device}, expected "
                             "float32 on the CPU")
    n = sum(p.numel() for p in params)
    flat = torch.zeros(n, dtype=torch.float32)
    flat_grad = torch.zeros(n, dtype=torch.float32)
    views = []
    offset = 0
    with torch.no_grad():
        for p in params:
            k = p.numel()
            p.data = flat[offset:offset + k].view_as(p)
            view = flat_grad[offset:offset + k].view_as(p)
            p.grad = view
            views.append(view)
            offset += k
    return flat, flat_grad, views


def _gather_grads(params, views):
    """Puts every parameter's gradient back into its view of the flat gradient where autograd
    or a hook replaced it (None: a zero gradient); returns the bytes that took copying."""
    copied = 0
    for p, view in zip(params, views):
        if p.grad is None:  # unused in this backward, or set to None
            view.zero_()
        elif p.grad.data_ptr() != view.data_ptr() or p.grad.stride() != view.stride():
            view.copy_(p.grad)
            copied += view.numel() * 4
        p.grad = view
    return copied


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
        self.client = client
        self.clock = clock
        self.staleness = 0
        self.bytes_copied = 0  # gradient bytes step() had to copy back into the flat buffer
        self.flat, self.flat_grad, self._grad_views = _flat_views(self._params)
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
        self.bytes_copied += _gather_grads(self._params, self._grad_views)

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


# --- the runtime owns the loop -----------------------------------------------------------------

class _Replica:
    """One copy of the module (a worker's, or the evaluator's): its parameters are views into
    one flat buffer that each call loads from the shards' values, and their gradients views
    into another that each step hands back."""

    def __init__(self, module):
        self.module = module
        self.params = [p for _, p in _parameters(module)]
        self.flat, self.flat_grad, self.grad_views = _flat_views(self.params)
        self.bags = embedding_bags(module)
        # Held for a whole call: a worker (or evaluator) replaced after a failure may start on
        # its own thread while the one it replaces is still inside a call (torch lets go of the
        # GIL), and the bags' record and given states must not mix.
        self.lock = threading.Lock()

    def load(self, params):
        self.flat.numpy()[:] = params

    def record(self, inputs, chunk):
        """Each bag's ids when the module runs on `inputs` (in chunks of `chunk` rows)."""
        for bag in self.bags:
            bag.record()
        try:
            with torch.no_grad():
                for start in range(0, len(inputs[0]), chunk):
                    self.module(*[a[start:start + chunk] for a in inputs])
        finally:
            ids = [bag.recorded() for bag in self.bags]
        return [i.numpy() for i in ids]

    def give(self, tables, grads):
        """Hands each bag its rows (keys, values, grads, inverse) as the runtime pulled them;
        `grads`: their values receive a gradient."""
        given = []
        for bag, (_, values, _, inverse) in zip(self.bags, tables):
            v = torch.from_numpy(np.array(values))  # a copy: the runtime's is read-only
            v.requires_grad_(grads)
            bag.give(v, torch.from_numpy(inverse.astype(np.int64)))
            given.append(v)
        return given

    def taken(self):
        """Each bag done with its given rows: how many ids its forwards used."""
        return [bag.taken() for bag in self.bags]

    def store(self, grad):
        _gather_grads(self.params, self.grad_views)
        grad[:] = self.flat_grad.numpy()
        self.flat_grad.zero_()


def _check_used(bags, used, tables):
    """A forward that read other ids than the recorded one would pair ids with wrong rows."""
    for bag, n, (_, _, _, inverse) in zip(bags, used, tables):
        if n != len(inverse):
            raise RuntimeError(f"EmbeddingBag '{bag._table_args['name']}': the forward read {n} "
                               f"ids, {len(inverse)} were recorded: is the module's forward "
                               "deterministic?")


def _labels_for_runtime(target):
    """The labels the runtime keeps of a target: class indices when it holds them (integers
    >= 0, or floats that are all 0 or 1: a binary model's evaluation needs them), else zeros."""
    t = target.detach()
    if t.dim() == 1 and len(t) > 0:
        if t.is_floating_point():
            if bool(((t == 0) | (t == 1)).all()):
                return t.to(torch.int32).numpy()
        elif int(t.min()) >= 0:
            return t.to(torch.int32).numpy()
    return np.zeros(len(t), dtype=np.int32)


class _ModulePlugin:
    """actorps.train's plug-in around an nn.Module: the runtime splits, shuffles and counts the
    rows, pulls and pushes; each step here runs the module on its minibatch's rows."""

    def __init__(self, module, loss_fn, train, test, name, init, eval_batch):
        self.spec = model_spec(module, name=name, init=init)
        self.loss_fn = loss_fn
        self.train = train
        self.test = test
        self.eval_batch = eval_batch
        self.module = module
        self.replicas = {}
        self.lock = threading.Lock()
        self.evaluator = _Replica(copy.deepcopy(module))

    def replica(self, worker):
        with self.lock:
            if worker not in self.replicas:
                self.replicas[worker] = _Replica(copy.deepcopy(self.module))
            return self.replicas[worker]

    def _batch(self, split, rows):
        index = torch.from_numpy(rows)
        return [a[index] for a in split]

    def keys(self, worker, clock, rows):
        batch = self._batch(self.train, rows)
        rep = self.replica(worker)
        with rep.lock:
            return rep.record(batch[:-1], len(rows))

    def step(self, worker, clock, params, grad, rows, tables):
        rep = self.replica(worker)
        with rep.lock:
            return self._step(rep, params, grad, rows, tables)

    def _step(self, rep, params, grad, rows, tables):
        rep.load(params)
        batch = self._batch(self.train, rows)
        given = rep.give(tables, grads=True)
        try:
            loss = self.loss_fn(rep.module(*batch[:-1]), batch[-1])
            loss.backward()
        finally:
            used = rep.taken()
        _check_used(rep.bags, used, tables)
        for v, (_, _, g, _) in zip(given, tables):
            if v.grad is not None:
                g[:] = v.grad.numpy()
        rep.store(grad)
        return float(loss)

    def eval_keys(self):
        with self.evaluator.lock:
            return self.evaluator.record(self.test[:-1], self.eval_batch)

    def evaluate(self, params, tables):
        with self.evaluator.lock:
            return self._evaluate(self.evaluator, params, tables)

    def _evaluate(self, rep, params, tables):
        rep.load(params)
        rep.give(tables, grads=False)
        outputs = []
        try:
            with torch.no_grad():
                for start in range(0, len(self.test[0]), self.eval_batch):
                    outputs.append(rep.module(*[a[start:start + self.eval_batch]
                                                for a in self.test[:-1]]))
        finally:
            used = rep.taken()
        _check_used(rep.bags, used, tables)
        out = torch.cat(outputs)
        target = self.test[-1]
        if out.dim() == 1 or (out.dim() == 2 and out.shape[1] == 1):
            return {"logits": out.reshape(-1).numpy().astype(np.float32)}
        loss = float(self.loss_fn(out, target))
        accuracy = float((out.argmax(1) == target).float().mean())
        return {"accuracy": accuracy, "loss": loss}


def _split(data, what):
    if not isinstance(data, (tuple, list)) or len(data) < 2:
        raise ValueError(f"{what}: expected a tuple (inputs..., target) of tensors")
    tensors = [torch.as_tensor(a) for a in data]
    rows = len(tensors[0])
    for i, t in enumerate(tensors):
        if t.dim() == 0 or len(t) != rows:
            raise ValueError(f"{what}: element {i} has {len(t) if t.dim() else 0} rows, "
                             f"element 0 has {rows}")
    return tensors


def train(module, loss_fn, train, test, *, name="torch", init="fan_in", eval_batch=4096,
          **options):
    """Trains `module` with the runtime owning the loop: actorps.train's checkpoints, resume,
    metrics file, evaluator, kills and replacements, standbys (replicas=1) and consistency
    modes, for an nn.Module whose dense parameters and actorps.torch.EmbeddingBag tables live
    on the shards.

        summary = actorps.torch.train(model, torch.nn.BCEWithLogitsLoss(),
                                      (dense, keys, y), (dense_t, keys_t, y_t),
                                      ps=2, workers=2, mode="sync", optimizer="sgd", lr=0.1,
                                      epochs=1, metrics="run.jsonl")

    train and test: (inputs..., target), tensors with one row per sample; a step runs
    loss_fn(module(*inputs[rows]), target[rows]) on its minibatch's rows (the runtime's split,
    shuffle and epochs, as for every model) and backward(). A module whose output is one
    logit per row is a binary model: the evaluations report AUC, log loss, accuracy and
    calibration on test; else the output's argmax is scored against the target's classes.
    Each bag's ids are found before a step by running the module once without gradients with
    the bags only noting their ids (its forward must be deterministic); the shards then pull
    those rows with the step's parameters. Every option of actorps.train (ps, workers, mode,
    staleness, optimizer, lr, batch, epochs, checkpoint_dir, checkpoint_every, resume, kill,
    replicas, metrics, tensorboard_dir, ...) applies. The module ends holding the final
    dense parameters; its bags' rows stay those of the run (export_dir, checkpoints).
    Returns actorps.train's summary."""
    train_t = _split(train, "train")
    test_t = _split(test, "test")
    plugin = _ModulePlugin(module, loss_fn, train_t, test_t, name, init, eval_batch)
    rows = len(train_t[0])
    runtime_train = (np.zeros((rows, 1), np.float32), _labels_for_runtime(train_t[-1]))
    runtime_test = (np.zeros((len(test_t[0]), 1), np.float32), _labels_for_runtime(test_t[-1]))
    summary = _train(plugin, runtime_train, runtime_test, **options)
    final = torch.from_numpy(np.asarray(summary["parameters"]))
    with torch.no_grad():
        offset = 0
        for _, p in _parameters(module):
            k = p.numel()
            p.copy_(final[offset:offset + k].view_as(p))
            offset += k
    export_dir = options.get("export_dir", "")
    if export_dir:
        summary["export"] = _newest_version(export_dir)
        _save_dense(module, summary["export"])
    return summary


def _newest_version(export_dir):
    versions = [int(d) for d in os.listdir(export_dir) if d.isdigit()]
    if not versions:
        raise RuntimeError(f"export_dir: {export_dir} holds no version after the run")
    return os.path.join(export_dir, str(max(versions)))


def _save_dense(module, version):
    """torch.save of the module's dense parameters (its state_dict without the bags' rows,
    which model.capnp holds) as version/module.pt, written aside and renamed into place."""
    dense = {k: v for k, v in module.state_dict().items()}
    staged = os.path.join(version, ".module.pt.tmp")
    torch.save(dense, staged)
    os.replace(staged, os.path.join(version, "module.pt"))


def load_export(module, path):
    """Loads what actorps.torch.train exported (path: the export directory, its newest
    version, or a version DIR/<v>) into `module`, built as for training: each dense
    parameter by name and shape, and each EmbeddingBag's rows, which it then serves from this
    process (an id without a row reads zeros). Raises ValueError when the module does not fit
    the export, RuntimeError when the export is missing or damaged."""
    model = read_export(path)
    tensors, tables = model["tensors"], model["tables"]
    with torch.no_grad():
        for name, p in _parameters(module):
            if name not in tensors:
                raise ValueError(f"module: the export has no tensor '{name}'")
            value = torch.from_numpy(tensors[name])
            shape = list(p.shape) or [1]
            if list(value.shape) != shape:
                raise ValueError(f"module: '{name}' is {shape}, the export's "
                                 f"{list(value.shape)}")
            p.copy_(value.reshape(p.shape))
    for bag in embedding_bags(module):
        name = bag.table_spec.name
        if name not in tables:
            raise ValueError(f"module: the export has no table '{name}'")
        bag.load_rows(*tables[name])
    return module
