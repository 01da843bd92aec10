#!/usr/bin/env python3
"""Prints the last loss each (worker, clock) reported in a metrics file's train events, one line
each, sorted: `worker clock loss` (loss as repr, every bit of it). Two runs that trained alike
print the same lines; the shell tests diff them.
usage: tests/train_losses.py METRICS.jsonl"""
import json
import sys

last = {}
with open(sys.argv[1]) as f:
    for line in f:
        e = json.loads(line)
        if e.get("event") == "train":
            last[(e["worker"], e["clock"])] = e["loss"]
for (w, c), loss in sorted(last.items()):
    print(w, c, repr(loss))
