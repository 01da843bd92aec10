#!/usr/bin/env python3
"""actorps.scale against a running multi-process job (one process per task on 127.0.0.1, the
actorps binary of ACTORPS_BINARY, no TLS): a 2-ps sync run with a third ps task started from a
cluster spec that lists it (it joins as a spare). From Python: a growth to 4 is refused (no
spare ps:3, code 'refused'), the growth to 3 and the shrink to 2 are done, saying what the run
goes on with; the chief's metrics hold one resize event 2 -> 3 and one 3 -> 2, every task exits
0 (the removed ps:2 too) and the run trains its 300 clocks. A chief that is not there is
'unreachable'; a bad count is a ValueError before anything is asked. The process ends through
actorps.exit_task (the call keeps a connection to the chief, as a TaskCluster does)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import harness

import actorps  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NET = ["--insecure", "--heartbeat-ms", "200", "--peer-timeout-ms", "2000", "--connect-timeout", "30"]
TRAIN = ["--dataset", "synthetic", "--model", "784-64-10", "--mode", "sync", "--batch", "32",
         "--steps", "300", "--eval-every", "0", "--seed", "5", "--no-progress",
         "--slow", "worker:0=40"]


def free_ports(n):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "free_port_pairs.py"),
                          str(n)], capture_output=True, text=True, check=True).stdout
    return [f"127.0.0.1:{p}" for p in out.split()]


def await_line(path, text, seconds=60):
    """Blocks until a line of `path` holds `text`; fails after `seconds`. The chief writes its
    metrics as the run goes; nothing announces a line, so the file is read again every 20 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                if any(text in line for line in f):
                    return
        time.sleep(0.02)
    raise AssertionError(f"no line holding {text} in {path} after {seconds} s")


class Scale(unittest.TestCase):
    def test_arguments_refused_before_asking(self):
        with self.assertRaisesRegex(ValueError, "ps: must be 1 or more"):
            actorps.scale("127.0.0.1:1", ps=0)
        with self.assertRaisesRegex(ValueError, "ps, workers or both"):
            actorps.scale("127.0.0.1:1")
        with self.assertRaisesRegex(ValueError, "timeout"):
            actorps.scale("127.0.0.1:1", workers=2, timeout=0)

    def test_no_chief_there_is_unreachable(self):
        with self.assertRaises(actorps.Error) as caught:
            actorps.scale(free_ports(1)[0], ps=3, connect_timeout=1)
        self.assertEqual(caught.exception.code, "unreachable")

    def test_grow_and_shrink_a_running_job(self):
        binary = harness.actorps_binary("starts the job's tasks")
        with tempfile.TemporaryDirectory() as d:
            a = free_ports(6)
            jobs = {"chief": a[:1], "ps": a[1:3], "worker": a[3:5]}
            with open(f"{d}/c.json", "w") as f:
                json.dump({"cluster": jobs}, f)
            with open(f"{d}/c3.json", "w") as f:
                json.dump({"cluster": dict(jobs, ps=a[1:3] + a[5:])}, f)
            metrics = f"{d}/run.jsonl"
            tasks = {}

            def start(task, spec, *flags):
                with open(f"{d}/{task}.log", "w") as log:  # the child keeps its own copy
                    tasks[task] = subprocess.Popen(
                        [binary, task.split(":")[0], "--cluster", spec, "--task", task, *NET,
                         *flags], stdout=log, stderr=subprocess.STDOUT)

            try:
                for t in ["ps:0", "ps:1", "worker:0", "worker:1"]:
                    start(t, f"{d}/c.json")
                start("chief:0", f"{d}/c.json", *TRAIN, "--metrics", metrics)
                start("ps:2", f"{d}/c3.json")
                await_line(metrics, '"task":"ps:2"')  # the spare has joined
                await_line(metrics, '"event":"train"')
                with self.assertRaises(actorps.Error) as caught:
                    actorps.scale(a[0], ps=4, timeout=60)
                self.assertEqual(caught.exception.code, "refused")
                self.assertIn("no spare ps:3", str(caught.exception))
                self.assertEqual(actorps.scale(a[0], ps=3, timeout=60),
                                 "the run goes on with 3 shards and 2 workers")
                self.assertEqual(actorps.scale(a[0], ps=2, timeout=60),
                                 "the run goes on with 2 shards and 2 workers")
                for t, p in tasks.items():
                    status = p.wait(timeout=120)
                    with open(f"{d}/{t}.log") as log:
                        self.assertEqual(status, 0, f"{t}: {log.read()}")
            finally:
                for p in tasks.values():
                    if p.poll() is None:
                        p.kill()
            with open(metrics) as f:
                events = [json.loads(line) for line in f]
        resizes = [(e["from"], e["to"]) for e in events if e.get("event") == "resize"]
        self.assertEqual(resizes, [(2, 3), (3, 2)])
        summary = [e for e in events if e.get("event") == "summary"][-1]
        self.assertEqual(summary["clocks"], 300)


if __name__ == "__main__":
    result = unittest.main(exit=False).result
    actorps.exit_task(0 if result.wasSuccessful() else 1)
