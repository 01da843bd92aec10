#!/usr/bin/env python3
"""apps/python/examples/launch_local.py, the launcher of fashion_mnist.py --launch-local, with
stand-in tasks (no actorps, no torch): each process gets a TF_CONFIG naming its own task in one
cluster of distinct 127.0.0.1 ports; every line is echoed with its task's name; a task exiting
non-zero stops the others at once (a ps task would wait for its worker forever) and fails the
launch, and so does a run past --timeout."""
import json
import os
import subprocess
import sys
import time
import unittest

import harness  # noqa: F401  (the tests' shared conventions; nothing to require here)

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python",
                        "examples", "launch_local.py")

# A task that prints what it was told; worker:1 then exits with the status in $FAIL_WITH (if
# set) and every other task waits for an event that never comes, as a ps task waits for a
# worker that is gone.
TASK = """
import json, os, sys, threading
config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
print("task " + json.dumps(config, sort_keys=True), flush=True)
if "FAIL_WITH" in os.environ:
    if (task["type"], task["index"]) == ("worker", 1):
        sys.exit(int(os.environ["FAIL_WITH"]))
    threading.Event().wait()
"""


def launch(*flags, env=None):
    began = time.monotonic()
    run = subprocess.run([sys.executable, LAUNCHER, *flags, "--", sys.executable, "-c", TASK],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, **(env or {})))
    return run, time.monotonic() - began


class Launcher(unittest.TestCase):
    def test_each_task_gets_its_own_tf_config(self):
        run, _ = launch("--ps", "2", "--workers", "3")
        self.assertEqual(run.returncode, 0, run.stderr)
        configs = {}
        for line in run.stdout.splitlines():
            name, text = line.split(" task ", 1)  # "[worker:2] task {...}"
            configs[name] = json.loads(text)
        expected = [f"[ps:{i}]" for i in range(2)] + [f"[worker:{i}]" for i in range(3)]
        self.assertEqual(sorted(configs), sorted(expected))
        clusters = {json.dumps(c["cluster"], sort_keys=True) for c in configs.values()}
        self.assertEqual(len(clusters), 1)  # one cluster, the same in every process
        cluster = configs["[ps:0]"]["cluster"]
        self.assertEqual((len(cluster["ps"]), len(cluster["worker"])), (2, 3))
        addresses = cluster["ps"] + cluster["worker"]
        self.assertEqual(len(set(addresses)), 5)
        self.assertTrue(all(a.startswith("127.0.0.1:") for a in addresses))
        for name, config in configs.items():
            kind, index = name.strip("[]").split(":")
            self.assertEqual(config["task"], {"type": kind, "index": int(index)})

    def test_a_failed_task_stops_the_others(self):
        run, took = launch("--ps", "1", "--workers", "2", env={"FAIL_WITH": "3"})
        self.assertEqual(run.returncode, 1)
        self.assertIn("worker:1 exited 3, stopping the others", run.stderr)
        self.assertLess(took, 60)  # stopped at once, not at the 600 s default timeout

    def test_a_run_past_the_timeout_is_stopped(self):
        run, took = launch("--ps", "1", "--workers", "1", "--timeout", "3",
                           env={"FAIL_WITH": "0"})  # no worker:1: every task waits forever
        self.assertEqual(run.returncode, 1)
        self.assertIn("still running after 3.0 s, stopping every task", run.stderr)
        self.assertLess(took, 60)


if __name__ == "__main__":
    unittest.main()
