#!/usr/bin/env python3
"""TaskCluster, one process per task from TF_CONFIG on 127.0.0.1: 1 ps and 2 worker processes
running this file, with SGD at lr 0.5.
- sync: worker w pushes 3 + 2w - 1 for every value: the mean is 3, so after clock c every value
  is exactly -1.5 (c + 1), checked by every worker at every clock; worker 0 then checkpoints
  the shards (TaskCluster.checkpoint: at clock 4, into its own directory) and restores them
  from it, the values unchanged.
- async: worker 0 pushes 1 for one clock, worker 1 (once that push is in) pushes 2 for 2000
  clocks; worker 0 then await_others() and its snapshot() is exactly -0.5 (1 + 2 * 2000) / 2
  (async scales each push by 1/W): every push of worker 1, which was still pushing when
  worker 0 ended its loop.
- scale: 3 ps tasks listed, the first 2 holding shards (ps=2), 16-float blocks; in sync as above
  every worker calls scale(ps=3) after clock 1 (the spare ps:2 taken in) and scale(ps=1) after
  clock 3 (ps:1 and ps:2 left out: their serve() returns 0): each returns the clock it goes on
  from (2, then 4) and every value is exactly -1.5 (c + 1) at every clock throughout, every row of
  64 sparse keys (their buckets moving) its first clock's step times c + 1. More workers than
  TF_CONFIG lists are refused; workers asking for different numbers are both refused, nothing
  changed.
- workers: 2 ps tasks and 4 worker tasks listed, the job started with 1 shard and 2 workers
  (ps=1, workers=2): the spare workers 2 and 3 wait in worker(). After clock 1 the two call
  scale(ps=2, workers=3): worker 2 is taken in at clock 2 (joined_at), with ps:1 as the second
  shard; after clock 3 the three call scale(workers=2): worker 2 is out (in_job False) and
  finishes. Each worker in the job pushes 6 / W + (w - (W - 1) / 2) for W workers, so that the
  pushes sum to 6 and, a minibatch teaching as much as before a change (a push weighs 1 / 2,
  the first number of workers), every value is exactly -1.5 (c + 1) after clock c, checked by
  every worker at every clock, the joiner at its first pull too. Worker 3 is never taken in:
  its worker() raises once the job has finished, and it exits 0.
Each worker calls finish(), the ps's serve() then returns 0, and every process exits 0 (through
actorps.exit_task)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402

CLOCKS = 4
ASYNC_CLOCKS = [1, 2000]  # each worker's, in async
WORKERS = 2


def spec():
    return actorps.ModelSpec([("w", [100]), ("b", [7, 3])])


SCALE_AT = {1: 3, 3: 1}  # after clock c, every worker goes on with that many shards


def sparse_spec():
    table = actorps.SparseTable("emb", 2, optimizer="sgd", lr=0.5)
    return actorps.ModelSpec([("w", [100]), ("b", [7, 3])], sparse_tables=[table])


def run_scaled(task):
    """Sync on 2 of 3 ps tasks, grown to 3 and shrunk to 1: the values exact throughout, and
    the rows of 64 keys (whose buckets move between the shards) too."""
    client = task.worker()
    params = np.empty(task.total_floats, np.float32)
    keys = np.arange(1, 65, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rows = np.empty((keys.size, 2), np.float32)
    client.wait(client.pull(0, params, rows=[(0, keys, rows)]))
    grad = np.full(task.total_floats, 3 + 2 * task.index - (task.workers - 1), np.float32)
    row_grads = np.full((keys.size, 2), 3 + 2 * task.index - (task.workers - 1), np.float32)
    try:
        task.scale(ps=2, workers=task.workers + 1)
        print(f"worker {task.index}: a worker TF_CONFIG does not list was taken", flush=True)
        return 1
    except actorps.Error as e:
        print(f"worker {task.index}: refused: {e}", flush=True)
    wrong, went_on, first_rows = 0, [], None
    for c in range(CLOCKS + 2):
        client.wait(client.push_pull(c, grad, params, push=[(0, keys, row_grads)],
                                     rows=[(0, keys, rows)]))
        wrong += int(np.count_nonzero(params != np.float32(-1.5 * (c + 1))))
        if first_rows is None:  # a row's step, the same every clock: SGD on the same mean
            first_rows = rows.copy()
            wrong += int(np.count_nonzero(first_rows != first_rows[0, 0]))
            wrong += int(first_rows[0, 0] == 0)
        wrong += int(np.count_nonzero(rows != first_rows * np.float32(c + 1)))
        if c in SCALE_AT:
            went_on.append(task.scale(ps=SCALE_AT[c]))
    wrong += int(np.count_nonzero(task.snapshot() != np.float32(-1.5 * (CLOCKS + 2))))
    task.finish()
    print(f"worker {task.index}: went on at clocks {went_on}; {CLOCKS + 2} clocks, "
          f"{params.size} values and {keys.size} rows, {wrong} wrong", flush=True)
    return 0 if wrong == 0 else 1


WORKER_SCALE_AT = {1: dict(ps=2, workers=3), 3: dict(workers=2)}  # after clock c


def run_workers(task):
    """Workers taken in and left out of a sync job on 1 then 2 shards: the values exact
    throughout (see the top)."""
    try:
        client = task.worker()  # a spare waits here until taken in
    except actorps.Error as e:
        print(f"worker {task.index}: not taken in: {e}", flush=True)
        return 0 if task.index == 3 else 1
    params = np.empty(task.total_floats, np.float32)
    c = task.joined_at
    client.wait(client.pull(c, params))
    wrong = int(np.count_nonzero(params != np.float32(-1.5 * c)))
    went_on = []
    while c < CLOCKS + 2:
        w = task.workers
        grad = np.full(task.total_floats, 6 / w + (task.index - (w - 1) / 2), np.float32)
        client.wait(client.push_pull(c, grad, params))
        wrong += int(np.count_nonzero(params != np.float32(-1.5 * (c + 1))))
        c += 1
        if c - 1 in WORKER_SCALE_AT:
            went_on.append(task.scale(**WORKER_SCALE_AT[c - 1]))
            wrong += int(went_on[-1] != c)
            if not task.in_job:
                break
    task.finish()
    print(f"worker {task.index}: joined at {task.joined_at}, went on at clocks {went_on}, "
          f"trained to clock {c} with {task.workers} workers, {wrong} wrong", flush=True)
    return 0 if wrong == 0 else 1


def run_mismatched(task):
    """The two workers ask for different numbers of shards: both refused, the run goes on."""
    client = task.worker()
    params = np.empty(task.total_floats, np.float32)
    client.wait(client.pull(0, params))
    grad = np.full(task.total_floats, 3 + 2 * task.index - (task.workers - 1), np.float32)
    wrong = 0
    for c in range(CLOCKS):
        client.wait(client.push_pull(c, grad, params))
        wrong += int(np.count_nonzero(params != np.float32(-1.5 * (c + 1))))
        if c == 1:
            try:
                task.scale(ps=1 + task.index)
                print(f"worker {task.index}: scale(ps={1 + task.index}) was taken", flush=True)
                return 1
            except actorps.Error as e:
                print(f"worker {task.index}: refused: {e}", flush=True)
    task.finish()
    print(f"worker {task.index}: {CLOCKS} clocks, {params.size} values, {wrong} wrong",
          flush=True)
    return 0 if wrong == 0 else 1


def run_task(mode):
    """This process is the task $TF_CONFIG names; returns its exit status."""
    if mode == "workers":
        task = actorps.TaskCluster(spec(), ps=1, workers=2, mode="sync", optimizer="sgd",
                                   lr=0.5, block_floats=16, timeout=60)
        return task.serve() if task.is_ps else run_workers(task)
    if mode in ("scale", "mismatch"):
        task = actorps.TaskCluster(sparse_spec() if mode == "scale" else spec(), ps=2,
                                   mode="sync", optimizer="sgd", lr=0.5, block_floats=16,
                                   timeout=60)
        if task.is_ps:
            return task.serve()
        return run_scaled(task) if mode == "scale" else run_mismatched(task)
    task = actorps.TaskCluster(spec(), mode=mode, optimizer="sgd", lr=0.5, timeout=60)
    if task.is_ps:
        return task.serve()
    client = task.worker()
    params = np.empty(task.total_floats, np.float32)
    client.wait(client.pull(0, params))
    wrong = 0
    if mode == "sync":
        grad = np.full(task.total_floats, 3 + 2 * task.index - (task.workers - 1), np.float32)
        for c in range(CLOCKS):
            client.wait(client.push_pull(c, grad, params))
            wrong += int(np.count_nonzero(params != np.float32(-1.5 * (c + 1))))
        clocks = CLOCKS
        if task.index == 0:  # the shards' state at clock CLOCKS on disk, and put back
            root = os.environ["ACTORPS_TEST_CHECKPOINT"]
            taken = task.checkpoint(root)
            before = task.snapshot()
            back = task.restore(root)
            kept = np.array_equal(task.snapshot(), before)
            print(f"worker 0: checkpoint at clock {taken['clock']} in "
                  f"{os.path.basename(taken['dir'])}, restored to clock {back}, "
                  f"{'the same' if kept else 'other'} values", flush=True)
    else:
        grad = np.full(task.total_floats, 1 + task.index, np.float32)
        clocks = ASYNC_CLOCKS[task.index]
        if task.index == 1:
            # Worker 1 starts once worker 0's push is in: a push is scaled by 1 / the workers
            # live then, and a worker 0 started late would otherwise push after worker 1 had
            # finished, alone (seen on a loaded machine: -1000.5 instead of -1000.25).
            deadline = time.monotonic() + 60
            while task.snapshot()[0] == 0:
                if time.monotonic() > deadline:
                    print("worker 1: worker 0's push never arrived", flush=True)
                    return 1
        for c in range(clocks):
            client.wait(client.push_pull(c, grad, params))
        if task.index == 0:
            task.await_others()
            final = task.snapshot()
            wrong = int(np.count_nonzero(final != np.float32(-0.5 * (1 + 2 * ASYNC_CLOCKS[1]) / WORKERS)))
            print(f"worker 0: its last pull {params[0]}, the final snapshot {final[0]}", flush=True)
    task.finish()
    print(f"worker {task.index}: {clocks} clocks, {params.size} values, {wrong} wrong", flush=True)
    return 0 if wrong == 0 else 1


def free_ports(n):
    """n free ports of 127.0.0.1, each with the port after it free too: a ps task's data link
    listens on its port + 1 (scripts/free_port_pairs.py)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "free_port_pairs.py")
    out = subprocess.run([sys.executable, script, str(n)], check=True, capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def run_cluster(test, mode, ps_tasks=1, workers=WORKERS):
    """ps_tasks ps and `workers` worker processes of this file in `mode`; each one's output
    (workers first), all exited 0."""
    ports = free_ports(ps_tasks + workers)
    cluster = {"ps": [f"127.0.0.1:{p}" for p in ports[:ps_tasks]],
               "worker": [f"127.0.0.1:{p}" for p in ports[ps_tasks:]]}
    # workers retry first
    tasks = [("worker", w) for w in range(workers)] + [("ps", p) for p in range(ps_tasks)]
    procs = []
    checkpoints = tempfile.mkdtemp(prefix="actorps-task-ckpt-")
    for kind, index in tasks:
        env = dict(os.environ, ACTORPS_TEST_CHECKPOINT=checkpoints, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": kind, "index": index}}))
        procs.append(subprocess.Popen([sys.executable, __file__, "--task", mode], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    outputs = []
    try:
        for (kind, index), proc in zip(tasks, procs):
            out, _ = proc.communicate(timeout=120)
            outputs.append(out)
            test.assertEqual(proc.returncode, 0, f"{kind}:{index} exited {proc.returncode}:\n{out}")
    finally:
        for proc in procs:  # none outlives the test
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(checkpoints, ignore_errors=True)
    return outputs


class TaskClusterProcesses(unittest.TestCase):
    def test_one_ps_two_workers_exact(self):
        outputs = run_cluster(self, "sync")
        for w in range(WORKERS):
            self.assertIn(f"worker {w}: {CLOCKS} clocks, 121 values, 0 wrong", outputs[w])
        self.assertIn(f"worker 0: checkpoint at clock {CLOCKS} in ckpt-{CLOCKS:012d}, restored "
                      f"to clock {CLOCKS}, the same values", outputs[0])

    def test_scale_grows_and_shrinks_the_shards_exactly(self):
        outputs = run_cluster(self, "scale", ps_tasks=3)
        for w in range(WORKERS):
            self.assertIn(f"worker {w}: refused: invalid_argument: scale: TF_CONFIG lists 2 "
                          "worker task(s), not 3",
                          outputs[w])
            self.assertIn(f"worker {w}: went on at clocks [2, 4]; {CLOCKS + 2} clocks, 121 "
                          "values and 64 rows, 0 wrong", outputs[w])
        # the shards' own word: ps:0 took both parts, ps:1 the first only, the spare ps:2 its
        # first part at the growth
        ps_logs = outputs[WORKERS:]
        self.assertIn("restored to the checkpoint at clock 4", ps_logs[0])
        self.assertIn("restored to the checkpoint at clock 2", ps_logs[1])
        self.assertNotIn("at clock 4", ps_logs[1])
        self.assertIn("restored to the checkpoint at clock 2", ps_logs[2])

    def test_scale_takes_workers_in_and_leaves_them_out_exactly(self):
        outputs = run_cluster(self, "workers", ps_tasks=2, workers=4)
        for w in (0, 1):
            self.assertIn(f"worker {w}: joined at 0, went on at clocks [2, 4], trained to clock "
                          f"{CLOCKS + 2} with 2 workers, 0 wrong", outputs[w])
        self.assertIn("worker 2: joined at 2, went on at clocks [4], trained to clock 4 with 2 "
                      "workers, 0 wrong", outputs[2])
        self.assertIn("worker 3: not taken in: ", outputs[3])
        self.assertIn("the job finished without taking worker 3 in", outputs[3])
        # the spare ps:1 took its part at the growth
        self.assertIn("restored to the checkpoint at clock 2", outputs[4 + 1])

    def test_scale_refuses_workers_asking_for_different_numbers(self):
        outputs = run_cluster(self, "mismatch", ps_tasks=3)
        for w in range(WORKERS):
            self.assertIn(f"worker {w}: refused: ", outputs[w])
            self.assertIn("asks for", outputs[w])
            self.assertIn(f"worker {w}: {CLOCKS} clocks, 121 values, 0 wrong", outputs[w])

    def test_await_others_then_snapshot_has_every_push(self):
        outputs = run_cluster(self, "async")
        print(outputs[0])
        for w in range(WORKERS):
            self.assertIn(f"worker {w}: {ASYNC_CLOCKS[w]} clocks, 121 values, 0 wrong", outputs[w])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--task"]:
        try:
            status = run_task(sys.argv[2])
        except Exception as e:  # a normal exit may wait for gone peers forever (CAF 0.17)
            print(f"{type(e).__name__}: {e}", flush=True)
            status = 1
        actorps.exit_task(status)
    unittest.main()
