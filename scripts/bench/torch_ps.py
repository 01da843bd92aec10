#!/usr/bin/env python3
"""Training throughput of the PyTorch Fashion-MNIST MLP (apps/python/examples/fashion_mnist.py:
784-256-128-10, 64 rows per worker per step, Adam at lr 0.001, one torch thread per process):

- actorps_async / actorps_sync: 2 worker processes and 1 shard process on 127.0.0.1
  (actorps.TaskCluster from TF_CONFIG, actorps.torch.ShardedParameters: one push_pull per step,
  the shard applying Adam);
- rpc: PyTorch's own RPC parameter server (torch.distributed.rpc over TensorPipe, its default
  transport and channel choice: on one host shared memory, shm and cma, as actorps takes its
  local socket; rpc_tcp: TensorPipe's TCP transport and basic channel only): a ps process
  holding the parameters and a torch.optim.Adam, 2 trainer processes each doing, per step,
  params = rpc_sync(ps, get), forward/backward, rpc_sync(ps, update, grads): no barrier
  between the trainers (async, as the simplest parameter-server tutorial), the ps applying each
  update under a lock;
- single: the same loop in one PyTorch process, torch.optim.Adam in place.

Every process runs --warmup steps, then --steps timed steps. samples/s of a 2-worker run is all
timed samples over (last worker's end - first worker's start), on the machine's monotonic
clock, which every process shares; so start-up, imports and data loading are not counted.
Each configuration runs --repeats times, round-robin so that machine noise spreads over all;
the JSON holds every run, the medians, their ratios and actorps's bytes copied per step
(actorps.bytes_copied(), the binding's, plus the adapter's ShardedParameters.bytes_copied,
over the timed steps: 0 when nothing is copied).

    PYTHONPATH=build/python python3 scripts/bench/torch_ps.py -o build/bench/torch_ps.json
"""
import argparse
import copy
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "apps", "python", "examples"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import fashion_mnist  # noqa: E402  (the example's model, data and loader)
import launch_local  # noqa: E402

LR = 0.001
CONFIGS = ["single", "actorps_async", "actorps_sync", "rpc", "rpc_tcp"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", default=os.path.join(ROOT, "build", "bench", "torch_ps.json"))
    p.add_argument("--steps", type=int, default=1000, help="timed steps per worker")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--layers", default="784-256-128-10")
    p.add_argument("--data", default=fashion_mnist.DEFAULT_DATA)
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("--role", choices=["single", "actorps", "rpc"], help=argparse.SUPPRESS)
    p.add_argument("--mode", default="async", help=argparse.SUPPRESS)
    p.add_argument("--tcp", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--store-port", type=int, help=argparse.SUPPRESS)
    return p.parse_args()


class Batches:
    """The training split and worker w's batches of one seeded permutation, as the example
    takes them (every W-th batch), cycling."""

    def __init__(self, args, w, workers):
        self.x, self.y = fashion_mnist.load(args.data, "train")
        self.order = torch.randperm(len(self.y), generator=torch.Generator().manual_seed(1))
        self.w, self.workers, self.batch = w, workers, args.batch
        self.per_worker = len(self.y) // (workers * args.batch)

    def __call__(self, step):
        start = ((step % self.per_worker) * self.workers + self.w) * self.batch
        rows = self.order[start:start + self.batch]
        return self.x[rows], self.y[rows]


def run_store(args):
    """The driver's TCPStore, which every process of a run reaches on --store-port: the driver
    outlives them all, so no process's exit can break another's wait."""
    return dist.TCPStore("127.0.0.1", args.store_port, None, False,
                         datetime.timedelta(seconds=args.timeout))


def barrier(store, name, count):
    """Returns when `count` processes have called barrier(store, name, count)."""
    if store.add(name, 1) == count:
        store.set(name + "/all", "1")
    store.wait([name + "/all"])


def timed(args, step, after_warmup=lambda: None, workers=1):
    """Runs step(i) --warmup times, calls after_warmup(), waits for every worker (without
    this an async worker would start its clock while another still loads its data), then runs
    step(i) --steps times on the clock: (start, end)."""
    for i in range(args.warmup):
        step(i)
    after_warmup()
    if workers > 1:
        barrier(run_store(args), "start", workers)
    began = time.monotonic()
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    return began, time.monotonic()


def report(began, ended, samples, **more):
    print("result: " + json.dumps(dict(began=began, ended=ended, samples=samples, **more)),
          flush=True)


def loss_of(model, batch):
    x, y = batch
    return torch.nn.functional.cross_entropy(model(x), y)


# --- single: one PyTorch process ----------------------------------------------------------

def run_single(args, template):
    model = copy.deepcopy(template)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    batches = Batches(args, 0, 1)

    def step(i):
        optimizer.zero_grad()
        loss_of(model, batches(i)).backward()
        optimizer.step()

    began, ended = timed(args, step)
    report(began, ended, args.steps * args.batch)
    return 0


# --- actorps: the task $TF_CONFIG names ----------------------------------------------------

def run_actorps(args, template):
    import actorps
    import actorps.torch
    task = actorps.TaskCluster(actorps.torch.model_spec(template), mode=args.mode,
                               optimizer="adam", lr=LR)
    if task.is_ps:
        return task.serve()
    model = copy.deepcopy(template)
    batches = Batches(args, task.index, task.workers)
    shards = actorps.torch.ShardedParameters(model, task.worker())

    def step(i):
        loss_of(model, batches(i)).backward()
        shards.step()

    copied = []  # (binding, adapter) bytes after the warm-up: counted as the clock is

    began, ended = timed(args, step, lambda: copied.extend(
        (actorps.bytes_copied(), shards.bytes_copied)), task.workers)
    task.finish()
    report(began, ended, args.steps * args.batch,
           binding_bytes_copied=actorps.bytes_copied() - copied[0],
           adapter_bytes_copied=shards.bytes_copied - copied[1])
    return 0


# --- rpc: PyTorch's RPC parameter server ---------------------------------------------------

class RpcParameterServer:
    """The parameters and their Adam, in the ps process; RPCs arrive on TensorPipe's threads."""

    def __init__(self, template):
        self.params = list(copy.deepcopy(template).parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=LR)
        self.lock = threading.Lock()

    def get(self):
        with self.lock:
            return torch.nn.utils.parameters_to_vector(self.params)  # a copy, sent whole

    def update(self, flat_grad):
        with self.lock:
            offset = 0
            for p in self.params:
                p.grad = flat_grad[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
            self.optimizer.step()


SERVER = None  # the ps process's RpcParameterServer


def rpc_get():
    return SERVER.get()


def rpc_update(flat_grad):
    SERVER.update(flat_grad)


def run_rpc(args, template):
    global SERVER
    import torch.distributed.rpc as rpc
    config = json.loads(os.environ["TF_CONFIG"])
    kind, index = config["task"]["type"], config["task"]["index"]
    workers = len(config["cluster"]["worker"])
    rank = 0 if kind == "ps" else 1 + index
    tcp_only = {"_transports": ["uv"], "_channels": ["basic"]} if args.tcp else {}
    options = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8, rpc_timeout=args.timeout,
        init_method="tcp://" + config["cluster"]["ps"][0],  # rank 0's rendezvous store
        **tcp_only)
    if rank == 0:
        SERVER = RpcParameterServer(template)
        rpc.init_rpc("ps", rank=0, world_size=1 + workers, rpc_backend_options=options)
        rpc.shutdown()  # waits until every trainer shuts down too, but may return first:
        run_store(args).wait(["left/all"])  # its exit, the rendezvous's end, would break theirs
        return 0
    batches = Batches(args, index, workers)
    model = copy.deepcopy(template)
    rpc.init_rpc(f"trainer{index}", rank=rank, world_size=1 + workers,
                 rpc_backend_options=options)

    def step(i):
        torch.nn.utils.vector_to_parameters(rpc.rpc_sync("ps", rpc_get), model.parameters())
        model.zero_grad()
        loss_of(model, batches(i)).backward()
        grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        rpc.rpc_sync("ps", rpc_update, args=(grad,))

    began, ended = timed(args, step, workers=workers)
    rpc.shutdown()
    store = run_store(args)
    if store.add("left", 1) == workers:
        store.set("left/all", "1")
    report(began, ended, args.steps * args.batch)
    return 0


# --- the driver ----------------------------------------------------------------------------

def results_of(outputs):
    results = []
    for output in outputs:
        results += [json.loads(l[len("result: "):]) for l in output.splitlines()
                    if l.startswith("result: ")]
    return results


def run_config(args, config):
    """One run of a configuration in fresh processes: its record, or exits naming the failure."""
    store = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=args.timeout),
                          wait_for_workers=False)  # this run's barriers (run_store)
    own = [sys.executable, os.path.abspath(__file__), "--store-port", str(store.port),
           "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--batch", str(args.batch), "--layers", args.layers,
           "--data", args.data, "--timeout", str(args.timeout)]
    if config == "single":
        run = subprocess.run(own + ["--role", "single"], capture_output=True, text=True,
                             timeout=args.timeout)
        ok, outputs = run.returncode == 0, [run.stdout + run.stderr]
    else:
        if config.startswith("rpc"):
            role = ["--role", "rpc"] + (["--tcp"] if config == "rpc_tcp" else [])
        else:
            role = ["--role", "actorps", "--mode", config[len("actorps_"):]]
        tasks = launch_local.launch(own + role, 1, 2, args.timeout, echo=False)
        ok, outputs = launch_local.succeeded(tasks), [t.output for t in tasks]
    results = results_of(outputs)
    if not ok or len(results) != (1 if config == "single" else 2):
        sys.exit(f"torch_ps.py: {config} failed:\n" + "\n".join(outputs))
    began = min(r["began"] for r in results)
    wall = max(r["ended"] for r in results) - began
    samples = sum(r["samples"] for r in results)
    record = {"config": config, "samples": samples, "wall_s": round(wall, 3),
              "samples_per_s": round(samples / wall, 1),
              "worker_samples_per_s": [round(r["samples"] / (r["ended"] - r["began"]), 1)
                                       for r in results]}
    if config.startswith("actorps"):
        copied = sum(r["binding_bytes_copied"] + r["adapter_bytes_copied"] for r in results)
        record["bytes_copied_per_step"] = copied / (len(results) * args.steps)
    return record


def main():
    args = parse_args()
    torch.set_num_threads(1)  # one core per process, as in the example
    torch.manual_seed(1)
    template = fashion_mnist.make_model([int(w) for w in args.layers.split("-")])
    if args.role:
        return {"single": run_single, "actorps": run_actorps, "rpc": run_rpc}[args.role](
            args, template)
    load_before = os.getloadavg()[0]
    runs = []
    for r in range(args.repeats):
        for config in CONFIGS:
            print(f"torch_ps.py: run {r + 1}/{args.repeats} {config}", file=sys.stderr, flush=True)
            runs.append(run_config(args, config))
            print(f"torch_ps.py:   {runs[-1]['samples_per_s']} samples/s", file=sys.stderr,
                  flush=True)
    median = {c: round(statistics.median(x["samples_per_s"] for x in runs
                                         if x["config"] == c), 1) for c in CONFIGS}
    copied = [x["bytes_copied_per_step"] for x in runs if "bytes_copied_per_step" in x]
    result = {
        "benchmark": "torch_ps", "model": "mlp:" + args.layers, "optimizer": f"adam lr {LR}",
        "batch_per_worker": args.batch, "workers": 2, "shards": 1, "steps_per_worker": args.steps,
        "warmup_steps": args.warmup, "repeats": args.repeats, "torch": torch.__version__,
        "rpc_backend": "TensorPipe: rpc its default transports and channels, rpc_tcp uv and "
                       "basic only", "cpus": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg()[0], "runs": runs,
        "median_samples_per_s": median,
        "ratios": {"actorps_async_vs_rpc": round(median["actorps_async"] / median["rpc"], 2),
                   "actorps_sync_vs_rpc": round(median["actorps_sync"] / median["rpc"], 2),
                   "actorps_async_vs_rpc_tcp": round(median["actorps_async"] / median["rpc_tcp"],
                                                     2),
                   "actorps_async_vs_single": round(median["actorps_async"] / median["single"], 2),
                   "rpc_vs_single": round(median["rpc"] / median["single"], 2)},
        "actorps_bytes_copied_per_step": max(copied)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result[k] for k in ("median_samples_per_s", "ratios",
                                             "actorps_bytes_copied_per_step")}))
    return 0


if __name__ == "__main__":
    if "--role" in sys.argv[1:]:
        import actorps  # noqa: E402  (exit_task: CAF 0.17 may wait for gone peers at exit)
        try:
            status = main()
        except Exception as e:  # reported in the output the driver shows
            print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
            status = 1
        actorps.exit_task(status)
    sys.exit(main())
