#!/usr/bin/env python3
"""Runs a program once per task of a loop-of-your-own cluster on 127.0.0.1 (P ps tasks, W worker
tasks: what actorps.TaskCluster reads; it has no chief or evaluator), each process with its own
$TF_CONFIG, on free ports. Every line a task prints is shown prefixed with its task name. Exits 0
when every task exited 0; as soon as one fails (or --timeout passes) the others are stopped,
since a ps task would wait for that worker forever, and the status is 1.

    apps/python/examples/launch_local.py --ps 1 --workers 2 -- python3 my_loop.py --epochs 3

Imported, launch() does the same and returns each task's status and output.
"""
import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

FREE_PORT_PAIRS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                               "scripts", "free_port_pairs.py")


def cluster_on_free_ports(ps, workers):
    """The TF_CONFIG "cluster" object: ps tasks first, then workers, each on a free port of
    127.0.0.1 whose next port is free too (a ps task's data link listens on port + 1)."""
    out = subprocess.run([sys.executable, FREE_PORT_PAIRS, str(ps + workers)], check=True,
                         capture_output=True, text=True).stdout
    addresses = [f"127.0.0.1:{p}" for p in out.split()]
    return {"ps": addresses[:ps], "worker": addresses[ps:]}


class Task:
    """One process of the cluster: its name ("worker:0"), status and the lines it printed."""

    def __init__(self, kind, index):
        self.kind, self.index = kind, index
        self.name = f"{kind}:{index}"
        self.lines = []
        self.returncode = None
        self.proc = None

    @property
    def output(self):
        return "".join(self.lines)


def _echo(task, echo):
    for line in task.proc.stdout:  # until the process closes its end
        task.lines.append(line)
        if echo:
            sys.stdout.write(f"[{task.name}] {line}")
            sys.stdout.flush()


def launch(argv, ps, workers, timeout=600, echo=True):
    """Runs argv once per task (workers first: their connect retries until the ps listens) and
    waits for all. Returns the tasks (ps tasks first), each with .returncode (-9: stopped
    because another failed or time ran out) and .output."""
    cluster = cluster_on_free_ports(ps, workers)
    tasks = [Task("ps", i) for i in range(ps)] + [Task("worker", i) for i in range(workers)]
    ended = queue.Queue()  # tasks, as their process ends
    readers = []
    for task in tasks[ps:] + tasks[:ps]:
        task_env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": task.kind, "index": task.index}}))
        task.proc = subprocess.Popen(argv, env=task_env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        reader = threading.Thread(target=_echo, args=(task, echo), daemon=True)
        reader.start()
        readers.append(reader)
        threading.Thread(target=lambda t=task: ended.put((t, t.proc.wait())), daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        for _ in tasks:
            task, status = ended.get(timeout=max(0.0, deadline - time.monotonic()))
            task.returncode = status
            if status != 0:
                print(f"launch_local: {task.name} exited {status}, stopping the others",
                      file=sys.stderr, flush=True)
                break
    except queue.Empty:
        print(f"launch_local: still running after {timeout} s, stopping every task",
              file=sys.stderr, flush=True)
    finally:
        for task in tasks:  # none outlives the launch
            if task.proc.poll() is None:
                task.proc.kill()
            task.returncode = task.proc.wait()
        for reader in readers:
            reader.join()
    return tasks


def succeeded(tasks):
    return all(task.returncode == 0 for task in tasks)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ps", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600, help="seconds for the whole run")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the program and its flags")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.ps < 1 or args.workers < 1:
        p.error("give --ps ≥ 1, --workers ≥ 1 and, after --, the command to run")
    return 0 if succeeded(launch(command, args.ps, args.workers, args.timeout)) else 1


if __name__ == "__main__":
    sys.exit(main())
