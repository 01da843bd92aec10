#!/usr/bin/env bash
# The CPU that training itself costs, one process per task against simulate: what decides the
# samples/s ratio on a machine whose cores the run keeps busy (the target: processes
# >= 0.9x simulate). processes_vs_simulate.sh's CPU seconds include each process's start (the
# loader, CAF, every worker and the evaluator inflating the dataset), which the chief's
# samples/s do not time; here each round runs processes_vs_simulate.sh twice, with --epochs 1
# and --epochs 5 (the same start, the same final evaluation), and the difference is 4 epochs of
# training alone, for every kind and role.
# Why it matters: if the run is CPU-bound, processes reach about 1 / steady_cpu_ratio of
# simulate's samples/s; the samples/s ratio below that says they wait besides.
# usage: scripts/bench/steady_state_cpu.sh [-o FILE] [-r ROUNDS] [-b BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/steady_state_cpu.json rounds=3 build=build
while getopts "o:r:b:" opt; do
  case $opt in
    o) out=$OPTARG ;; r) rounds=$OPTARG ;; b) build=$OPTARG ;;
    *) sed -n 11p "$0" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "steady_state_cpu.sh: -r must be a positive number" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
files=()
for ((round = 1; round <= rounds; round++)); do
  for epochs in 1 5; do
    f="${out%.json}.round-$round-epochs-$epochs.json"
    scripts/bench/processes_vs_simulate.sh -r 1 -b "$build" -o "$f" -- --epochs "$epochs" > /dev/null
    files+=("$f")
  done
  echo "round $round/$rounds" >&2
done

"$python" - "$out" "${files[@]}" <<'PY'
import json, statistics, sys
out, files = sys.argv[1], sys.argv[2:]
pairs = [(json.load(open(a)), json.load(open(b))) for a, b in zip(files[::2], files[1::2])]
def run(result, kind):
    return next(r for r in result["runs"] if r["kind"] == kind)
kinds = [r["kind"] for r in pairs[0][0]["runs"]]
rounds = []
for short, long in pairs:
    row = {}
    for kind in kinds:
        s, l = run(short, kind), run(long, kind)
        roles = sorted(set(s["cpu_s_by_role"]) | set(l["cpu_s_by_role"]))
        row[kind] = {"steady_cpu_s": l["cpu_s"] - s["cpu_s"],
                     "start_cpu_s": s["cpu_s"] - (l["cpu_s"] - s["cpu_s"]) / 4,
                     "steady_cpu_s_by_role": {r: l["cpu_s_by_role"].get(r, 0) - s["cpu_s_by_role"].get(r, 0)
                                              for r in roles},
                     "samples_per_s": l["samples_per_s"],
                     "final_test_accuracy": l["final_test_accuracy"]}
    for kind in kinds:
        if kind != "simulate":
            row[kind]["steady_cpu_ratio_to_simulate"] = row[kind]["steady_cpu_s"] / row["simulate"]["steady_cpu_s"]
            row[kind]["samples_per_s_ratio_to_simulate"] = row[kind]["samples_per_s"] / row["simulate"]["samples_per_s"]
    rounds.append(row)
def med(kind, key):
    return statistics.median(r[kind][key] for r in rounds)
summary = {}
for kind in kinds:
    s = {k: med(kind, k) for k in ("steady_cpu_s", "start_cpu_s", "samples_per_s")}
    s["steady_cpu_s_by_role"] = {role: statistics.median(r[kind]["steady_cpu_s_by_role"][role] for r in rounds)
                                 for role in rounds[0][kind]["steady_cpu_s_by_role"]}
    if kind != "simulate":
        s["steady_cpu_ratio_to_simulate"] = med(kind, "steady_cpu_ratio_to_simulate")
        s["samples_per_s_ratio_to_simulate"] = med(kind, "samples_per_s_ratio_to_simulate")
        s["samples_per_s_ratio_if_cpu_bound"] = 1 / s["steady_cpu_ratio_to_simulate"]
    summary[kind] = s
result = {"bench": "steady_state_cpu",
          "what": "processes_vs_simulate.sh with --epochs 5 minus the same with --epochs 1, each "
                  "round; steady_cpu_s: the CPU of 4 epochs of training alone (user+sys of every "
                  "process); start_cpu_s: the rest of a run less its first epoch's training; "
                  "medians over the rounds; samples/s from the 5-epoch runs",
          "cores": pairs[0][0]["cores"], "rounds": len(rounds), "summary": summary,
          "per_round": rounds, "files": files}
json.dump(result, open(out, "w"), indent=1)
for kind, s in summary.items():
    line = f"{kind:>8}: training {s['steady_cpu_s']:5.2f} s CPU per 4 epochs, start {s['start_cpu_s']:4.2f} s"
    if kind != "simulate":
        line += (f"; {s['steady_cpu_ratio_to_simulate']:.3f}x simulate's training CPU (CPU-bound: "
                 f"{s['samples_per_s_ratio_if_cpu_bound']:.2f}x its samples/s), measured "
                 f"{s['samples_per_s_ratio_to_simulate']:.2f}x")
    print(line)
    if len(s["steady_cpu_s_by_role"]) > 1:
        print(" " * 10 + "by role: " + ", ".join(f"{r} {v:.2f} s" for r, v in s["steady_cpu_s_by_role"].items()))
print(f"-> {out}")
PY
