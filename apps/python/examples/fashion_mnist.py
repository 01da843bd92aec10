#!/usr/bin/env python3
"""The Fashion-MNIST MLP written in PyTorch, trained through actorps's shards: W workers, each
with its own copy of the model and its own part of every epoch, `loss.backward();
shards.step()` per batch; the shards average the gradients (sync) or apply each push (ssp,
async) with the optimizer, its rate decaying by a cosine over the run's clocks (actorps's
default for a run whose length is known). Prints one line per epoch (worker 0's test accuracy) and a summary;
exits 1 when the final test accuracy is below --min-accuracy.

Three ways to run it:
- by default, one process: the shards (a LocalCluster) and W workers on threads;
- --launch-local: one process per task, P ps and W worker processes of this file on 127.0.0.1
  (launch_local.py: free ports, each process's TF_CONFIG); their summaries merged into one;
- --task: this process is the task $TF_CONFIG names (a TaskCluster: ps tasks serve a shard,
  worker tasks train). A loop of your own has no chief: worker 0 plays its part, waiting for
  the other workers to finish and evaluating the shards' final parameters on the whole test set.

    PYTHONPATH=build/python python3 apps/python/examples/fashion_mnist.py --epochs 3
    PYTHONPATH=build/python python3 apps/python/examples/fashion_mnist.py --launch-local --ps 1
"""
import argparse
import copy
import gzip
import json
import os
import sys
import threading
import time

import numpy as np
import torch

import actorps
import actorps.torch
import launch_local

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def read_idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def load(data_dir, split):
    """(images as float32 rows in [0, 1], labels as int64) of the split "train" or "t10k"."""
    x = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"), 16)
    y = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(x.reshape(len(y), 784).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


def training_rows(data_dir):
    """The training split's rows, from its label file's header: a ps task loads no data."""
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), "rb") as f:
        return int.from_bytes(f.read(8)[4:], "big")


def total_clocks(args, workers):
    """Clocks per worker of the whole run, as train() runs them: the shards' schedule spans it."""
    return args.epochs * (training_rows(args.data) // (workers * args.batch))


def make_model(widths):
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="directory of the four idx .gz files")
    p.add_argument("--ps", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--mode", default="sync", choices=["sync", "ssp", "async"])
    p.add_argument("--staleness", type=int, default=None, help="the ssp bound")
    p.add_argument("--optimizer", default="adam", choices=["sgd", "momentum", "adam", "adagrad"])
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="rows per worker per clock")
    p.add_argument("--layers", default="784-256-128-10")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-accuracy", type=float, default=0.0)
    p.add_argument("--json", help="write the summary as JSON here")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--launch-local", action="store_true",
                       help="one process per task on 127.0.0.1: --ps ps and --workers workers")
    where.add_argument("--task", action="store_true",
                       help="this process is the task $TF_CONFIG names (ps and workers from it)")
    p.add_argument("--timeout", type=float, default=600,
                   help="--launch-local: seconds for the whole run")
    return p.parse_args(argv)


class Data:
    """The template model every worker copies, its spec, and (after load(), which a ps task
    never calls) the training and test split."""

    def __init__(self, args):
        self.template = make_model([int(w) for w in args.layers.split("-")])
        self.spec = actorps.torch.model_spec(self.template, name="torch-mlp:" + args.layers)
        self.data_dir = args.data

    def load(self):
        self.train_x, self.train_y = load(self.data_dir, "train")
        self.test_x, self.test_y = load(self.data_dir, "t10k")
        return self


def train(model, shards, w, workers, data, args):
    """Worker w's part of every epoch through `shards`. Returns its statistics."""
    clocks_per_epoch = len(data.train_y) // (workers * args.batch)
    losses, max_staleness = [], 0
    began = time.monotonic()
    for epoch in range(args.epochs):
        # the same permutation in every worker; worker w takes every W-th batch of it
        order = torch.randperm(len(data.train_y), generator=torch.Generator().manual_seed(
            args.seed * 1000 + epoch))
        for c in range(clocks_per_epoch):
            start = (c * workers + w) * args.batch
            rows = order[start:start + args.batch]
            loss = torch.nn.functional.cross_entropy(model(data.train_x[rows]),
                                                     data.train_y[rows])
            loss.backward()
            max_staleness = max(max_staleness, shards.step())
            losses.append(loss.item())
        if w == 0:
            print(f"epoch {epoch + 1}: clock {shards.clock}, train loss "
                  f"{np.mean(losses[-clocks_per_epoch:]):.4f}, test accuracy "
                  f"{accuracy(model, data.test_x, data.test_y):.4f} (worker 0)", flush=True)
    ended = time.monotonic()  # the machine's clock, the same in every process
    return {"clocks_per_worker": clocks_per_epoch * args.epochs,
            "samples": clocks_per_epoch * args.epochs * args.batch,
            "wall_s": round(ended - began, 3), "began": began, "ended": ended,
            "max_staleness": max_staleness}


def run_threads(args, data):
    """The shards and every worker in this process; the summary, or None after an error."""
    data.load()
    ps = actorps.LocalCluster(data.spec, ps=args.ps, workers=args.workers, mode=args.mode,
                              staleness=args.staleness, optimizer=args.optimizer, lr=args.lr,
                              seed=args.seed, total_clocks=total_clocks(args, args.workers))
    stats = [None] * args.workers
    errors = []

    def worker(w):
        try:
            model = copy.deepcopy(data.template)
            shards = actorps.torch.ShardedParameters(model, ps.worker(w))
            stats[w] = train(model, shards, w, args.workers, data, args)
        except Exception as e:  # reported by the main thread
            errors.append((w, e))

    began = time.monotonic()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    for w, e in errors:
        print(f"worker {w}: {type(e).__name__}: {e}", file=sys.stderr)
    if errors:
        return None
    final = copy.deepcopy(data.template)  # the shards' final parameters, in model order
    torch.nn.utils.vector_to_parameters(torch.from_numpy(ps.snapshot()), final.parameters())
    return merged(args, stats, wall, accuracy(final, data.test_x, data.test_y),
                  actorps.bytes_copied())


def merged(args, stats, wall, acc, bytes_copied):
    """The run's summary from each worker's statistics."""
    samples = sum(s["samples"] for s in stats)
    return {"mode": args.mode, "workers": len(stats), "shards": args.ps, "epochs": args.epochs,
            "clocks_per_worker": stats[0]["clocks_per_worker"], "samples": samples,
            "wall_s": round(wall, 3), "samples_per_s": round(samples / wall, 1),
            "final_test_accuracy": round(acc, 4),
            "max_staleness": max(s["max_staleness"] for s in stats),
            "bytes_copied": bytes_copied}


def run_task(args, data):
    """This process's task of $TF_CONFIG; its exit status. A worker prints its statistics as
    "task summary: {...}" (worker 0 with the final test accuracy) for --launch-local."""
    workers = len(json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"])
    task = actorps.TaskCluster(data.spec, mode=args.mode, staleness=args.staleness,
                               optimizer=args.optimizer, lr=args.lr, seed=args.seed,
                               total_clocks=total_clocks(args, workers))
    if task.is_ps:
        return task.serve()
    data.load()
    model = copy.deepcopy(data.template)
    shards = actorps.torch.ShardedParameters(model, task.worker())
    stats = train(model, shards, task.index, task.workers, data, args)
    if task.index == 0:  # the chief's part: the final parameters (as run_threads), every test row
        task.await_others()  # in ssp and async the others may still be pushing
        final = copy.deepcopy(data.template)
        torch.nn.utils.vector_to_parameters(torch.from_numpy(task.snapshot()), final.parameters())
        stats["final_test_accuracy"] = accuracy(final, data.test_x, data.test_y)
    task.finish()
    stats.update(index=task.index, bytes_copied=actorps.bytes_copied())
    print("task summary: " + json.dumps(stats), flush=True)
    return 0


def run_launched(args, argv):
    """--ps ps tasks and --workers worker tasks of this file, one process each; the merged
    summary, or None when a task failed."""
    command = [sys.executable, os.path.abspath(__file__), "--task"]
    command += [a for a in argv if a != "--launch-local"]
    tasks = launch_local.launch(command, args.ps, args.workers, args.timeout)
    if not launch_local.succeeded(tasks):
        return None
    stats = []
    for task in tasks[args.ps:]:
        lines = [l for l in task.output.splitlines() if l.startswith("task summary: ")]
        stats.append(json.loads(lines[-1][len("task summary: "):]))
    wall = max(s["ended"] for s in stats) - min(s["began"] for s in stats)
    return merged(args, stats, wall, stats[0]["final_test_accuracy"],
                  sum(s["bytes_copied"] for s in stats))


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(1)  # one core per worker
    torch.manual_seed(args.seed)
    if args.launch_local:
        summary = run_launched(args, argv)
    else:
        data = Data(args)
        if args.task:
            return run_task(args, data)
        summary = run_threads(args, data)
    if summary is None:
        return 1
    summary["processes"] = args.launch_local
    print("summary: " + json.dumps(summary), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f)
    if summary["final_test_accuracy"] < args.min_accuracy:
        print(f"final test accuracy {summary['final_test_accuracy']:.4f} is below "
              f"--min-accuracy {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if "--task" in sys.argv[1:]:
        try:
            status = main(sys.argv[1:])
        except Exception as e:  # a normal exit may wait for gone peers forever (CAF 0.17)
            print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
            status = 1
        actorps.exit_task(status)
    sys.exit(main(sys.argv[1:]))
