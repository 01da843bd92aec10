#!/usr/bin/env python3
"""A small DLRM written in PyTorch whose embeddings live on actorps's shards, trained on
Criteo-format click logs by W workers on threads of this process, reporting test AUC.

The model follows the C++ plug-in (actors/model/dlrm_plugin.hpp, kernels/dlrm.hpp): the 13
integer features, as log(1 + max(x, 0)), go through the bottom MLP (ReLU on every layer) to
DIM floats; each of the 26 categorical values has a DIM-wide row in ONE sparse table (keys
criteo_key(field, value), the field in the key's top byte, the same 64-bit keys as the C++
reader), an actorps.torch.EmbeddingBag trained by the shards with Adagrad (lr 0.05, rows
uniform in ±0.05, accumulator from 1e-4, as the plug-in); the pairwise dot products of the 27
vectors with the bottom output feed the top MLP, whose one output is the click logit. The MLPs
are the module's dense parameters, trained by the shards with --optimizer. Each worker reads
its own share of the batches (batch b goes to worker b mod W), prefetches the next batch's
keys, and calls `loss.backward(); shards.step()`.

    build/actorps gen-data criteo --out /tmp/criteo --rows 40000 --test-rows 5000
    PYTHONPATH=build/python python3 apps/python/examples/dlrm.py --data /tmp/criteo

Prints the test AUC and log loss before and after training and a summary; exits 1 when the
final test AUC is below --min-auc. With --runtime the runtime owns the loop instead
(actorps.torch.train: its split and shuffle, --kill, --replicas, --checkpoint-dir, --resume,
--export-dir, --metrics), and its evaluator reports the AUC.
"""
import argparse
import copy
import json
import os
import sys
import threading
import time

import numpy as np
import torch

import actorps
import actorps.torch

DENSE = 13
FIELDS = 26
MASK56 = (1 << 56) - 1


# --- Criteo-format data -------------------------------------------------------------------

def _mix(z):
    """splitmix64's finaliser over a uint64 array (actors/ps/splitmix64.hpp)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


def criteo_keys(field, values):
    """criteo_key(field, value) of actors/ps/criteo_keys.hpp for an array of strings: the
    value's bytes hashed 8 at a time, the field in the top byte, an empty value `field << 56`."""
    raw = np.char.encode(values, "ascii")
    lengths = np.char.str_len(raw).astype(np.uint64)
    width = max(8, -(-raw.dtype.itemsize // 8) * 8)
    words = np.frombuffer(raw.astype(f"S{width}").tobytes(), dtype="<u8").reshape(len(raw), -1)
    with np.errstate(over="ignore"):
        h = np.uint64(0x9e3779b97f4a7c15) ^ lengths
        for i in range(words.shape[1]):
            mixed = _mix(h ^ words[:, i]) + np.uint64(0x632be59bd9b4e019)
            h = np.where(lengths > np.uint64(8 * i), mixed, h)
        low = _mix(h) & np.uint64(MASK56)
    low = np.where(low == 0, np.uint64(1), low)
    low = np.where(lengths == 0, np.uint64(0), low)
    return (np.uint64(field) << np.uint64(56)) | low


def load_criteo(path, limit=0):
    """(dense (n, 13) float32, keys (n, 26) int64 — the uint64 keys' bits, labels (n,) float32)
    of a Criteo TSV: label, I1..I13, C1..C26 (limit > 0: its first `limit` lines)."""
    labels, dense, cats = [], [], []
    with open(path) as f:
        for n, line in enumerate(f):
            if limit and n >= limit:
                break
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 1 + DENSE + FIELDS:
                raise ValueError(f"{path}:{n + 1}: {len(parts)} fields, expected 40")
            labels.append(parts[0])
            dense.append(parts[1:1 + DENSE])
            cats.append(parts[1 + DENSE:])
    ints = np.array(dense)
    ints = np.where(ints == "", "0", ints).astype(np.int64)
    x = np.log1p(np.maximum(ints, 0)).astype(np.float32)
    cats = np.array(cats)
    keys = np.stack([criteo_keys(f, cats[:, f]) for f in range(FIELDS)], axis=1)
    y = np.array(labels).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(keys.view(np.int64)), torch.from_numpy(y)


# --- the model -----------------------------------------------------------------------------

def mlp(widths, relu_last):
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if relu_last or i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class DLRM(torch.nn.Module):
    def __init__(self, dim, bottom, top):
        super().__init__()
        self.bottom = mlp([DENSE, *bottom, dim], relu_last=True)
        self.embeddings = actorps.torch.EmbeddingBag(
            dim, mode="sum", init="uniform", scale=0.05, optimizer="adagrad", lr=0.05,
            initial_accumulator=1e-4, name="embeddings")
        vectors = FIELDS + 1
        self.register_buffer("pairs", torch.tril_indices(vectors, vectors, offset=-1),
                             persistent=False)  # (i, j), i > j: (1,0), (2,0), (2,1), (3,0), ...
        self.top = mlp([dim + self.pairs.shape[1], *top, 1], relu_last=False)

    def forward(self, dense, keys):
        """The click logits of a batch: dense (n, 13), keys (n, 26)."""
        x0 = self.bottom(dense)
        n, dim = x0.shape
        rows = self.embeddings(keys.reshape(-1, 1)).view(n, FIELDS, dim)  # one id per bag
        v = torch.cat([x0.unsqueeze(1), rows], dim=1)
        dots = torch.bmm(v, v.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x0, dots], dim=1)).squeeze(1)


# --- metrics -------------------------------------------------------------------------------

def auc(scores, labels):
    """ROC AUC: the chance that a positive outscores a negative, ties counting one half."""
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels) > 0.5
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(scores)]
    for s, e in zip(starts, ends):  # ties share their mean rank (1-based)
        ranks[order[s:e]] = (s + e + 1) / 2
    pos = labels.sum()
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return 0.5
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def evaluate(model, test, chunk=4096):
    """(AUC, mean log loss) of the model on the test split, in chunks under no_grad (each
    chunk's forward pulls the rows of its keys)."""
    x, keys, y = test
    logits = []
    with torch.no_grad():
        for s in range(0, len(y), chunk):
            logits.append(model(x[s:s + chunk], keys[s:s + chunk]))
        z = torch.cat(logits)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y).item()
    return auc(z.numpy(), y.numpy()), loss


# --- the run -------------------------------------------------------------------------------

def widths(text):
    return [int(w) for w in text.split("-")] if text else []


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory holding train.tsv and test.tsv")
    p.add_argument("--rows", type=int, default=0, help="training lines to read (0: all)")
    p.add_argument("--test-rows", type=int, default=0, help="test lines to read (0: all)")
    p.add_argument("--ps", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--mode", default="sync", choices=["sync", "ssp", "async"])
    p.add_argument("--staleness", type=int, default=None, help="the ssp bound")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--dim", type=int, default=8)
    p.add_argument("--bottom", default="16", help="bottom MLP hidden widths, '-' joined")
    p.add_argument("--top", default="16", help="top MLP hidden widths, '-' joined")
    p.add_argument("--optimizer", default="adam", choices=["sgd", "momentum", "adam", "adagrad"])
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-auc", type=float, default=0.0,
                   help="exit 1 when the final test AUC is below this")
    p.add_argument("--json", default="", help="write the summary to this file")
    p.add_argument("--runtime", action="store_true",
                   help="let the runtime own the loop (actorps.torch.train): the flags below")
    p.add_argument("--kill", action="append", default=[], metavar="ROLE:INDEX@CLOCK",
                   help="--runtime: kill that actor at that global clock (repeatable)")
    p.add_argument("--replicas", type=int, default=0, help="--runtime: hot standbys per shard")
    p.add_argument("--checkpoint-dir", default="", help="--runtime: checkpoints here")
    p.add_argument("--checkpoint-every", type=int, default=0, help="--runtime: global clocks")
    p.add_argument("--resume", default="", help="--runtime: continue from this checkpoint dir")
    p.add_argument("--steps", type=int, default=0, help="--runtime: clocks per worker (0: epochs)")
    p.add_argument("--export-dir", default="", help="--runtime: export the model here")
    p.add_argument("--metrics", default="", help="--runtime: the metrics JSONL file")
    return p.parse_args(argv)


def kills(specs):
    """--kill ROLE:INDEX@CLOCK as actorps.train takes them: (role, index, clock)."""
    out = []
    for spec in specs:
        try:
            who, clock = spec.split("@")
            role, index = who.split(":")
            out.append((role, int(index), int(clock)))
        except ValueError:
            raise SystemExit(f"dlrm.py: --kill {spec}: expected ROLE:INDEX@CLOCK, e.g. ps:0@200")
    return out


def run_by_runtime(args, template, train, test):
    """actorps.torch.train owns the loop: the runtime's split, checkpoints, kills, standbys,
    and its evaluator's AUC on the test split (the metrics file holds every evaluation)."""
    out = actorps.torch.train(
        template, torch.nn.BCEWithLogitsLoss(), train, test, name="torch-dlrm", ps=args.ps,
        workers=args.workers, mode=args.mode, staleness=args.staleness,
        optimizer=args.optimizer, lr=args.lr, batch=args.batch,
        epochs=None if args.steps else args.epochs, steps=args.steps, seed=args.seed,
        schedule="constant",  # as the own loop's: a resumed run continues the same rate
        kill=kills(args.kill), replicas=args.replicas,
        checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
        resume=args.resume, export_dir=args.export_dir, metrics=args.metrics)
    summary = {k: v for k, v in out.items() if k != "parameters"}
    summary.update(train_rows=len(train[2]), test_rows=len(test[2]))
    print(f"after {out['clocks']} clocks x {args.workers} workers ({args.mode}, the runtime's "
          f"loop): test auc {out['final_test_auc']:.4f} logloss {out['final_test_loss']:.4f}, "
          f"{out['samples_per_s']:.0f} samples/s, {out['failures']} failures, "
          f"{out['recoveries']} recoveries, {out['failovers']} fail-overs", flush=True)
    return summary


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)  # the workers are the parallelism: one thread each
    train = load_criteo(os.path.join(args.data, "train.tsv"), args.rows)
    test = load_criteo(os.path.join(args.data, "test.tsv"), args.test_rows)
    x, keys, y = train
    batches = len(y) // args.batch
    clocks = args.epochs * (batches // args.workers)  # every worker the same number
    if clocks == 0:
        raise SystemExit(f"dlrm.py: {len(y)} training rows make no batch of {args.batch} "
                         f"for each of {args.workers} workers")

    torch.manual_seed(args.seed)
    template = DLRM(args.dim, widths(args.bottom), widths(args.top))
    if args.runtime:
        summary = run_by_runtime(args, template, train, test)
        return finish(args, summary)
    spec = actorps.torch.model_spec(template, name="torch-dlrm")
    ps = actorps.LocalCluster(spec, ps=args.ps, workers=args.workers, mode=args.mode,
                              staleness=args.staleness, optimizer=args.optimizer, lr=args.lr,
                              seed=args.seed)
    models = [copy.deepcopy(template) for _ in range(args.workers)]
    shards = [actorps.torch.ShardedParameters(m, ps.worker(w)) for w, m in enumerate(models)]
    before_auc, before_loss = evaluate(models[0], test)
    print(f"before training: test auc {before_auc:.4f} logloss {before_loss:.4f}", flush=True)

    max_staleness = [0] * args.workers
    losses = [0.0] * args.workers

    def batch_of(w, clock):
        b = (clock * args.workers + w) % (batches - batches % args.workers)
        return slice(b * args.batch, (b + 1) * args.batch)

    def run(w):
        model, sh = models[w], shards[w]
        for clock in range(clocks):
            rows = batch_of(w, clock)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(x[rows], keys[rows]), y[rows])
            loss.backward()
            losses[w] += loss.item()
            if clock + 1 < clocks:
                model.embeddings.prefetch(keys[batch_of(w, clock + 1)])
            max_staleness[w] = max(max_staleness[w], sh.step())

    start = time.perf_counter()
    errors = []

    def guarded(w):
        try:
            run(w)
        except Exception as e:  # reported below, the run fails
            errors.append((w, e))

    threads = [threading.Thread(target=guarded, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    if errors:
        for w, e in errors:
            print(f"worker {w}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1

    # Worker 0 holds the parameters of the last clock (sync) or near them: pull the newest.
    final_auc, final_loss = evaluate(models[0], test)
    samples = clocks * args.workers * args.batch
    summary = {
        "train_rows": len(y), "test_rows": len(test[2]), "workers": args.workers,
        "mode": args.mode, "clocks_per_worker": clocks, "samples": samples,
        "seconds": round(seconds, 3), "samples_per_s": round(samples / seconds, 1),
        "mean_train_loss": sum(losses) / (clocks * args.workers),
        "before_test_auc": before_auc, "final_test_auc": final_auc,
        "final_test_logloss": final_loss, "max_staleness": max(max_staleness),
        "row_pulls_by_forward": sum(m.embeddings.pulls for m in models),
        "bytes_copied": actorps.bytes_copied() + sum(s.bytes_copied for s in shards)
                        + sum(m.embeddings.bytes_copied for m in models),
    }
    print(f"after {clocks} clocks x {args.workers} workers ({args.mode}): test auc "
          f"{final_auc:.4f} logloss {final_loss:.4f}, {summary['samples_per_s']:.0f} samples/s",
          flush=True)
    return finish(args, summary)


def finish(args, summary):
    """Writes --json; 1 when the final test AUC is below --min-auc."""
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if summary["final_test_auc"] < args.min_auc:
        print(f"final test auc {summary['final_test_auc']:.4f} is below --min-auc "
              f"{args.min_auc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
