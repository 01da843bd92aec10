#!/usr/bin/env bash
# scripts/bench/scale_copy_ahead.sh at a small size (one round), checked on what it wrote: both
# runs changed from 2 to 3 shards with their rows handed over; the copy-ahead run copied rows in
# more than one step of 64 Ki rows (the bound a real size crosses), the other copied none.
# usage: tests/bench_scale_copy_ahead_smoke_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=$(mktemp /tmp/actorps-scale-copy-ahead.XXXXXX.json)
trap 'rm -f "$out"' EXIT
"$root/scripts/bench/scale_copy_ahead.sh" -b "$build" -n 400000 -r 1 -o "$out" > /dev/null
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
runs = {f["run"]: f for f in r["runs"]}
assert set(runs) == {"never1", "always1"}, runs.keys()
for f in runs.values():
    assert f["freeze_ms"] > 0 and f["handed_over_bytes"] > 0 and f["lost_s"] >= 0, f
assert runs["never1"]["copied_ahead_bytes"] == 0, runs["never1"]
always = runs["always1"]
assert always["copied_ahead_bytes"] > 0 and always["copy_from_clock"] >= 0, always
assert always["copies_ahead"] >= 2, always  # one destination: more than one step
print("scale copy-ahead smoke: ok;", {k: always[k] for k in ("copied_ahead_bytes", "freeze_ms")})
PY
