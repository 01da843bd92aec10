#!/usr/bin/env bash
# scripts/bench/throughput.sh at a tiny size (40 minibatches, one repeat), checked on what it
# wrote: every configuration has its samples/s and CPU per sample; the workers' own train events
# stay within the default ssp bound (the script fails otherwise); and one worker alone computed
# ahead of its push's reply: its largest staleness is 1, which only a clock computed while its
# push is in flight can show (alone, every pull it waits for is current).
# usage: tests/bench_throughput_smoke_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=$(mktemp /tmp/actorps-throughput.XXXXXX.json)
trap 'rm -f "$out"' EXIT
"$root/scripts/bench/throughput.sh" -b "$build" -c 40 -r 1 -o "$out" > /dev/null
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["mode"] == "ssp", r["mode"]
for name in ("w1_ps2", "w2_ps2", "w4_ps2", "w1_ps1"):
    c = r["configs"][name]
    assert c["samples_per_s"] > 0 and c["cpu_us_per_sample"] > 0, (name, c)
    assert 0 <= c["worker_max_staleness"] <= 2, (name, c["worker_max_staleness"])
    assert r["cpu_over_plain_loop"][name] > 0, name
assert r["plain_loop"]["cpu_us_per_sample"] > 0, r["plain_loop"]
for name in ("w1_ps2", "w1_ps1"):
    assert r["configs"][name]["worker_max_staleness"] == 1, (name, r["configs"][name])
print("throughput smoke: ok;", {n: round(v, 2) for n, v in r["cpu_over_plain_loop"].items()})
PY
