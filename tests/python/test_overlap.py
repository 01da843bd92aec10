#!/usr/bin/env python3
"""A loop that overlaps its step with the push in flight (WorkerClient.may_compute_ahead): the
bound of each mode, and an ssp run of two workers, one a straggler, that computes clock c + 1
on the parameters pulled for c whenever that stays within the bound. The observer is the
parameter itself: every push adds exactly 1 to it, so the value a step reads counts the pushes
it includes, and ssp promises every worker's pushes of clocks < c - s."""
import time
import unittest

import harness

np = harness.require("numpy")
import actorps  # noqa: E402

WORKERS = 2
CLOCKS = 30


def one_float():
    return actorps.ModelSpec([("w", [1], "zeros", 0)])


def counting(mode, staleness=None, workers=WORKERS):
    # ssp and async apply each push with lr / workers: +1 per push of gradient -1
    return actorps.LocalCluster(one_float(), ps=1, workers=workers, mode=mode,
                                staleness=staleness, optimizer="sgd", lr=float(workers))


def overlapped_loop(client, step_s, seen):
    """Runs CLOCKS clocks computing ahead whenever the client allows; two parameter arrays (one
    read by the step, the other written by the push_pull in flight) and two gradient arrays."""
    bound = client.staleness_bound
    params = [np.zeros(1, np.float32), np.zeros(1, np.float32)]
    grads = [np.full(1, -1, np.float32), np.full(1, -1, np.float32)]
    cur = 0
    staleness, held = client.wait(client.pull(0, params[cur])), 0
    pending = None
    for c in range(CLOCKS):
        if pending is not None and not client.may_compute_ahead(staleness):
            staleness, held, cur, pending = client.wait(pending), c, cur ^ 1, None
        seen["ahead"] += held < c
        seen["worst"] = max(seen["worst"], staleness + c - held)
        if params[cur][0] < WORKERS * max(0, c - bound):
            seen["short"] += 1  # a push ssp promised is missing
        time.sleep(step_s)  # a straggler's slower step, not a wait
        if pending is not None:
            staleness, held, cur, pending = client.wait(pending), c, cur ^ 1, None
        pending = client.push_pull(c, grads[c % 2], params[cur ^ 1])
    client.wait(pending)  # no finish: the shards would share the rate among fewer (+2 a push)


class Overlap(unittest.TestCase):
    def test_bound_of_each_mode(self):
        for mode, staleness, bound in (("sync", None, 0), ("ssp", 0, 0), ("ssp", 2, 2),
                                       ("async", None, -1)):
            with self.subTest(mode=mode, staleness=staleness):
                client = counting(mode, staleness, 1).worker(0)
                self.assertEqual(client.staleness_bound, bound)
                self.assertEqual(client.may_compute_ahead(0), bound != 0)
                self.assertEqual(client.may_compute_ahead(1), bound < 0 or bound >= 2)
                self.assertEqual(client.may_compute_ahead(max(bound, 0)), bound < 0)

    def test_overlapped_ssp_loop_stays_within_the_bound(self):
        for s in (1, 2):
            with self.subTest(staleness=s):
                ps = counting("ssp", s)
                seen = [{"ahead": 0, "worst": 0, "short": 0} for _ in range(WORKERS)]
                errors = harness.run_workers(
                    lambda w: overlapped_loop(ps.worker(w), 0.003 * w, seen[w]), WORKERS)
                self.assertEqual(errors, [])
                self.assertEqual([x["short"] for x in seen], [0, 0])
                self.assertLessEqual(max(x["worst"] for x in seen), s)
                self.assertEqual(seen[0]["worst"], s)  # the straggler makes the bound bind
                self.assertGreaterEqual(seen[1]["ahead"], CLOCKS // 2)  # it overlaps
                self.assertEqual(ps.snapshot()[0], WORKERS * CLOCKS)  # every push applied once


if __name__ == "__main__":
    unittest.main()
