#!/usr/bin/env python3
"""The Fashion-MNIST MLP written in PyTorch, trained through actorps's shards: W workers on
threads of this process, each with its own copy of the model and its own part of every epoch,
`loss.backward(); shards.step()` per batch; the shards average the gradients (sync) or apply
each push (ssp, async) with the optimizer. Prints one line per epoch (worker 0's test accuracy)
and a summary; exits 1 when the final test accuracy is below --min-accuracy.

    PYTHONPATH=build/python python3 apps/python/examples/fashion_mnist.py --epochs 3
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


def parse_args():
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
    return p.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(1)  # one core per worker thread
    torch.manual_seed(args.seed)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    template = make_model([int(w) for w in args.layers.split("-")])
    spec = actorps.torch.model_spec(template, name="torch-mlp:" + args.layers)
    clocks_per_epoch = len(train_y) // (args.workers * args.batch)
    ps = actorps.LocalCluster(spec, ps=args.ps, workers=args.workers, mode=args.mode,
                              staleness=args.staleness, optimizer=args.optimizer, lr=args.lr,
                              seed=args.seed)
    losses = [[] for _ in range(args.workers)]
    errors = []
    max_staleness = [0] * args.workers

    def worker(w):
        try:
            model = copy.deepcopy(template)
            shards = actorps.torch.ShardedParameters(model, ps.worker(w))
            for epoch in range(args.epochs):
                # the same permutation in every worker; worker w takes every W-th batch of it
                order = torch.randperm(len(train_y), generator=torch.Generator().manual_seed(
                    args.seed * 1000 + epoch))
                for c in range(clocks_per_epoch):
                    start = (c * args.workers + w) * args.batch
                    rows = order[start:start + args.batch]
                    loss = torch.nn.functional.cross_entropy(model(train_x[rows]), train_y[rows])
                    loss.backward()
                    max_staleness[w] = max(max_staleness[w], shards.step())
                    losses[w].append(loss.item())
                if w == 0:
                    print(f"epoch {epoch + 1}: clock {shards.clock}, train loss "
                          f"{np.mean(losses[0][-clocks_per_epoch:]):.4f}, test accuracy "
                          f"{accuracy(model, test_x, test_y):.4f} (worker 0)", flush=True)
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
        return 1

    final = copy.deepcopy(template)  # the shards' final parameters, in model order
    torch.nn.utils.vector_to_parameters(torch.from_numpy(ps.snapshot()), final.parameters())
    acc = accuracy(final, test_x, test_y)
    samples = clocks_per_epoch * args.epochs * args.workers * args.batch
    summary = {"mode": args.mode, "workers": args.workers, "shards": args.ps,
               "epochs": args.epochs, "clocks_per_worker": clocks_per_epoch * args.epochs,
               "samples": samples, "wall_s": round(wall, 3),
               "samples_per_s": round(samples / wall, 1), "final_test_accuracy": round(acc, 4),
               "max_staleness": max(max_staleness), "bytes_copied": actorps.bytes_copied()}
    print("summary: " + json.dumps(summary), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f)
    if acc < args.min_accuracy:
        print(f"final test accuracy {acc:.4f} is below --min-accuracy {args.min_accuracy}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
