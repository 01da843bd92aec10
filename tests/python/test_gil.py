#!/usr/bin/env python3
"""wait() releases the GIL while it blocks. In sync mode worker 0's push_pull of clock 0 is
held by the shards until worker 1 pushes clock 0, and worker 1 is driven by the main thread.
The switch interval is raised so that the waiting thread gives the GIL up only where it
blocks: if wait kept the GIL, the main thread could not run until that wait ended (by its
timeout), would find it already ended, and worker 0 would get request_timeout."""
import sys
import threading
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402


class GilReleased(unittest.TestCase):
    def test_other_thread_runs_while_one_waits(self):
        spec = harness.small_spec(actorps)
        ps = actorps.LocalCluster(spec, ps=2, workers=2, mode="sync", optimizer="sgd", lr=0.1,
                                  timeout=20)
        n = spec.total_floats
        clients = [ps.worker(0), ps.worker(1)]
        params = [np.empty(n, np.float32) for _ in clients]
        for c, p in zip(clients, params):
            c.wait(c.pull(0, p))

        about_to_wait = threading.Event()
        outcome = {}

        def held_worker():
            ticket = clients[0].push_pull(0, np.ones(n, np.float32), params[0])
            about_to_wait.set()
            try:
                outcome["staleness"] = clients[0].wait(ticket)
            except actorps.Error as e:
                outcome["error"] = e.code

        previous = sys.getswitchinterval()
        sys.setswitchinterval(30.0)  # no preemption: the GIL moves only when a thread blocks
        try:
            waiter = threading.Thread(target=held_worker)
            waiter.start()
            about_to_wait.wait()
            # The main thread runs Python here only because the waiter released the GIL.
            self.assertEqual(outcome, {}, "the held wait ended before worker 1 pushed")
            progress = sum(range(1000))
            self.assertEqual(clients[1].wait(clients[1].push_pull(0, np.ones(n, np.float32),
                                                                   params[1])), 0)
            waiter.join()
        finally:
            sys.setswitchinterval(previous)
        self.assertEqual(progress, 499500)
        self.assertEqual(outcome, {"staleness": 0})
        np.testing.assert_array_equal(params[0], params[1])


if __name__ == "__main__":
    unittest.main()
