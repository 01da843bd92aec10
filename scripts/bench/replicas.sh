#!/usr/bin/env bash
# Usage: scripts/bench/replicas.sh [-o FILE] [-s STEPS] [-r REPEATS]
#
# The cost of hot standbys: the default `actorps simulate` run (Fashion-MNIST, default model,
# 2 workers, 2 shards, ssp) for STEPS clocks (default 500) with --replicas 0 and --replicas 1,
# alternated REPEATS times (default 3) in one window so that machine noise falls on both.
# Writes JSON (default build/bench/replicas.json): every run's samples/s (the simulation's own
# figure), the medians, ratio = median(replicas 1) / median(replicas 0), and the bytes sent to
# the standbys per clock (forwarded pushes and the initial images, from the shards' counters).
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build/bench/replicas.json"
steps=500 repeats=3
while getopts "o:s:r:h" opt; do
  case "$opt" in
    o) out="$(realpath -m "$OPTARG")" ;;
    s) steps="$OPTARG" ;;
    r) repeats="$OPTARG" ;;
    *) usage ;;
  esac
done
[[ $steps =~ ^[1-9][0-9]*$ && $repeats =~ ^[1-9][0-9]*$ ]] || usage
sim="$root/build/actorps"
[[ -x $sim ]] || { echo "replicas.sh: $sim is missing: build first" >&2; exit 1; }
python=$(command -v /usr/bin/python3 || command -v python3)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
load_before="$(cut -d' ' -f1 /proc/loadavg)"
for ((r = 1; r <= repeats; ++r)); do
  for replicas in 0 1; do
    echo "replicas.sh: run $r/$repeats --replicas $replicas ($steps clocks)" >&2
    if ! timeout 300 "$sim" simulate --steps "$steps" --eval-every 0 --no-progress \
         --replicas "$replicas" --metrics "$tmp/r$replicas.$r.jsonl" >/dev/null; then
      echo "replicas.sh: --replicas $replicas run $r failed or took over 300 s" >&2
      exit 1
    fi
  done
done
load_after="$(cut -d' ' -f1 /proc/loadavg)"

"$python" - "$tmp" "$out" "$steps" "$repeats" "$load_before" "$load_after" <<'PY'
import glob, json, os, statistics, sys

tmp, out, steps, repeats, load_before, load_after = sys.argv[1:]
runs = {0: [], 1: []}
for replicas in (0, 1):
    for path in sorted(glob.glob(os.path.join(tmp, "r%d.*.jsonl" % replicas))):
        summary = [json.loads(l) for l in open(path) if '"summary"' in l][-1]
        runs[replicas].append({"samples_per_s": summary["samples_per_s"],
                               "replicated_bytes": summary.get("replicated_bytes", 0),
                               "clocks": summary["clocks"]})
med = {r: statistics.median(x["samples_per_s"] for x in v) for r, v in runs.items()}
per_clock = statistics.median(x["replicated_bytes"] / x["clocks"] for x in runs[1])
result = {"bench": "replicas", "steps": int(steps), "repeats": int(repeats),
          "median_samples_per_s": {"replicas_0": med[0], "replicas_1": med[1]},
          "ratio": med[1] / med[0], "replicated_bytes_per_clock": per_clock,
          "loadavg_before": float(load_before), "loadavg_after": float(load_after),
          "runs": {"replicas_0": runs[0], "replicas_1": runs[1]}}
json.dump(result, open(out, "w"), indent=1)
print("samples/s: --replicas 0 %.0f, --replicas 1 %.0f (ratio %.3f); %.0f bytes to the standbys "
      "per clock" % (med[0], med[1], result["ratio"], per_clock))
print("JSON: " + out)
PY
