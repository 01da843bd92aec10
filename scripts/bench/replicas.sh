#!/usr/bin/env bash
# Usage: scripts/bench/replicas.sh [-p] [-o FILE] [-s STEPS] [-r REPEATS]
#
# The cost of hot standbys: the default `actorps simulate` run (Fashion-MNIST, default model,
# 2 workers, 2 shards, ssp) for STEPS clocks (default 500) with --replicas 0 and --replicas 1,
# alternated REPEATS times (default 3) in one window so that machine noise falls on both.
# Writes JSON (default build/bench/replicas.json): every run's samples/s (the simulation's own
# figure), the medians, ratio = median(replicas 1) / median(replicas 0), and the bytes sent to
# the standbys per clock (forwarded pushes and the initial images, from the shards' counters).
# -p: the same run as one process per task (scripts/launch_local.sh --insecure --ps 2 --workers 2: the
# standby of ps:i in ps task (i+1) mod 2, replication between the two ps processes over CAF).
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build/bench/replicas.json"
steps=500 repeats=3 processes=0
while getopts "po:s:r:h" opt; do
  case "$opt" in
    p) processes=1 ;;
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
    flags=(--steps "$steps" --eval-every 0 --no-progress --replicas "$replicas"
           --metrics "$tmp/r$replicas.$r.jsonl")
    if ((processes)); then
      run=("$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 --binary "$sim" -- "${flags[@]}")
    else
      run=("$sim" simulate "${flags[@]}")
    fi
    if ! timeout 300 "${run[@]}" >/dev/null; then
      echo "replicas.sh: --replicas $replicas run $r failed or took over 300 s" >&2
      exit 1
    fi
  done
done
load_after="$(cut -d' ' -f1 /proc/loadavg)"

"$python" - "$tmp" "$out" "$steps" "$repeats" "$load_before" "$load_after" "$processes" <<'PY'
import glob, json, os, statistics, sys

tmp, out, steps, repeats, load_before, load_after, processes = sys.argv[1:]
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
          "placement": "one process per task" if processes == "1" else "simulate",
          "median_samples_per_s": {"replicas_0": med[0], "replicas_1": med[1]},
          "ratio": med[1] / med[0], "replicated_bytes_per_clock": per_clock,
          "loadavg_before": float(load_before), "loadavg_after": float(load_after),
          "runs": {"replicas_0": runs[0], "replicas_1": runs[1]}}
json.dump(result, open(out, "w"), indent=1)
print("samples/s: --replicas 0 %.0f, --replicas 1 %.0f (ratio %.3f); %.0f bytes to the standbys "
      "per clock" % (med[0], med[1], result["ratio"], per_clock))
print("JSON: " + out)
PY
