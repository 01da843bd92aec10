#!/usr/bin/env bash
# Usage: scripts/chaos.sh [--processes] [--replicas] [-n RUNS] [-s SEED] [-t SECONDS] [-o FILE]
#
# --processes: one process per task, whole processes killed, frozen and restarted as an
# orchestrator does (scripts/chaos_processes.sh says what it does). Without it:
# Chaos benchmark: RUNS (default 20) `actorps simulate` trainings on synthetic data (3 workers,
# 2 shards, 600 clocks, a checkpoint every 100), each in a random mode (sync, ssp, async) with
# 1 to 3 random kills (`--kill ROLE:I@clock=C`) of random roles at random clocks. Prints, per
# run and in all, whether it completed, its failures and recoveries, the recovery times by role
# and the final accuracy; writes the same as JSON (default build/bench/chaos.json). Bounded: the
# whole script stops after SECONDS (default 600), each run after 120 s. Same SEED, same plan.
#
# --replicas: the same runs with `--replicas 1` (a hot standby per shard): a lost shard's
# standby takes over, so every run must complete with 0 rollbacks (a ps recovery that lost
# clocks); the JSON (default build/bench/chaos_replicas.json) counts fail-overs and rollbacks.
#
# --processes --replicas: the process chaos with a hot standby per shard (3 ps tasks, killed
# ps processes not restarted: their shards live on in the standbys); chaos_processes.sh says how.
set -euo pipefail

processes=0 replicas=0
while :; do
  case "${1:-}" in
    --processes) shift; processes=1 ;;
    --replicas) shift; replicas=1 ;;
    *) break ;;
  esac
done
if ((processes)); then
  ((replicas)) && set -- --replicas "$@"
  exec "$(dirname "$0")/chaos_processes.sh" "$@"
fi

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=20 seed=1 budget=600 out="$root/build/bench/chaos.json"
((replicas == 0)) || out="$root/build/bench/chaos_replicas.json"
. "$root/scripts/chaos_options.sh"
parse_chaos_options "$@"
sim="$root/build/actorps"
[[ -x $sim ]] || { echo "chaos.sh: $sim is missing: run scripts/setup.sh first" >&2; exit 1; }
python=$(command -v /usr/bin/python3 || command -v python3)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
RANDOM=$seed
steps=600 modes=(sync ssp async)
for ((r = 1; r <= runs; ++r)); do
  left=$((budget - SECONDS))
  if ((left <= 1)); then echo "chaos.sh: the ${budget} s budget is spent after $((r - 1)) runs" >&2; break; fi
  mode=${modes[RANDOM % 3]}
  kills=()
  for ((k = 0; k < 1 + RANDOM % 3; ++k)); do
    case $((RANDOM % 3)) in
      0) role="worker:$((RANDOM % 3))" ;;
      1) role="ps:$((RANDOM % 2))" ;;
      2) role="evaluator:0" ;;
    esac
    kills+=(--kill "$role@clock=$((50 + RANDOM % (steps - 100)))")
  done
  echo "chaos.sh: run $r/$runs: $mode ${kills[*]}" >&2
  metrics="$tmp/run$r.jsonl"
  set +e
  timeout $((left < 120 ? left : 120)) "$sim" simulate --dataset synthetic --model 784-64-10 \
    --workers 3 --ps 2 --steps $steps --mode "$mode" --seed "$r" --no-progress \
    --checkpoint-dir "$tmp/ckpt$r" --checkpoint-every 100 --metrics "$metrics" "${kills[@]}" \
    --replicas $replicas \
    > "$tmp/run$r.log" 2>&1
  status=$?
  set -e
  echo "{\"run\":$r,\"mode\":\"$mode\",\"kills\":\"${kills[*]}\",\"status\":$status,\"metrics\":\"$metrics\"}" >> "$tmp/runs.jsonl"
  rm -rf "$tmp/ckpt$r"
done

"$python" - "$tmp/runs.jsonl" "$out" "$seed" "$replicas" <<'PY'
import json, statistics, sys

runs_path, out_path, seed, replicas = sys.argv[1:]
replicas = int(replicas)
runs, recovery_ms = [], {"worker": [], "ps": [], "evaluator": []}
for line in open(runs_path):
    run = json.loads(line)
    events = [json.loads(l) for l in open(run.pop("metrics"))] if run["status"] != 127 else []
    summary = next((e for e in events if e["event"] == "summary"), None)
    run["completed"] = run["status"] == 0 and summary is not None
    run["failures"] = summary["failures"] if summary else None
    run["recoveries"] = summary["recoveries"] if summary else None
    run["final_test_accuracy"] = summary["final_test_accuracy"] if summary else None
    run["recovery_ms"] = [{"role": e["role"], "ms": e["ms"]} for e in events if e["event"] == "recovery"]
    run["failovers"] = sum(e["event"] == "failover" for e in events)
    # a shard recovered by going back to a checkpoint: clocks were lost
    run["rollbacks"] = sum(e["event"] == "recovery" and e["role"] == "ps" and e["lost_clocks"] > 0
                           for e in events)
    for r in run["recovery_ms"]:
        recovery_ms[r["role"]].append(r["ms"])
    runs.append(run)
    acc = "%.4f" % run["final_test_accuracy"] if summary else "-"
    print("run %2d %-5s %-62s %s  failures %s recoveries %s fail-overs %d rollbacks %d  accuracy %s" % (
        run["run"], run["mode"], run["kills"], "completed" if run["completed"] else "FAILED (exit %d)" % run["status"],
        run["failures"], run["recoveries"], run["failovers"], run["rollbacks"], acc))

def stats(values):
    return {"count": len(values), "mean_ms": statistics.mean(values) if values else None,
            "max_ms": max(values) if values else None}

accs = [r["final_test_accuracy"] for r in runs if r["completed"]]
result = {
    "bench": "chaos", "seed": int(seed), "replicas": replicas, "runs": len(runs),
    "completed": sum(r["completed"] for r in runs),
    "failures": sum(r["failures"] or 0 for r in runs),
    "recoveries": sum(r["recoveries"] or 0 for r in runs),
    "failovers": sum(r["failovers"] for r in runs),
    "rollbacks": sum(r["rollbacks"] for r in runs),
    "recovery": {role: stats(v) for role, v in recovery_ms.items()},
    "final_test_accuracy": {"min": min(accs) if accs else None, "mean": statistics.mean(accs) if accs else None,
                            "max": max(accs) if accs else None},
    "detail": runs,
}
json.dump(result, open(out_path, "w"), indent=1)
print("completed %d of %d runs; %d failures, %d recoveries, %d fail-overs, %d rollbacks" % (
      result["completed"], len(runs), result["failures"], result["recoveries"], result["failovers"],
      result["rollbacks"]))
for role, s in result["recovery"].items():
    if s["count"]:
        print("mean recovery %-9s %7.1f ms over %d (max %.1f ms)" % (role, s["mean_ms"], s["count"], s["max_ms"]))
if accs:
    print("final test accuracy: min %.4f, mean %.4f, max %.4f" % (min(accs), statistics.mean(accs), max(accs)))
print("JSON: " + out_path)
ok = result["completed"] == len(runs) and (replicas == 0 or result["rollbacks"] == 0)
sys.exit(0 if ok else 1)
PY
