#!/usr/bin/env bash
# Usage: scripts/bench/throughput.sh [-o FILE] [-b BUILD_DIR] [-c TOTAL_CLOCKS] [-r REPEATS] [-a BEFORE_BUILD]
#
# Training throughput of `actorps simulate` (Fashion-MNIST, default model, batch 64, default
# ssp mode) for W = 1, 2, 4 workers on 2 shards and W = 1 on 1 shard, against the no-actor
# baseline actorps_bench_loop. Every run processes the same number of samples: TOTAL_CLOCKS
# (default 2000) minibatches in all, i.e. TOTAL_CLOCKS / W clocks per worker; the plain loop runs
# TOTAL_CLOCKS steps. Each configuration runs REPEATS times (default 3), round-robin so that
# machine noise spreads over all of them; the JSON (default build/bench/throughput.json) holds
# every run and the medians, plus overhead_ratio_w1 = samples/s of W=1 (2 shards) / plain loop.
# samples/s is the simulation's own figure (chief: first start → last worker done). Each run's
# CPU seconds (user + sys of the process, all its threads) give CPU µs per sample, which a loaded
# machine disturbs far less than samples/s: cpu_over_plain_loop is each configuration's over the
# plain loop's. A run whose workers' train events show a staleness beyond the run's bound fails
# the script.
# With -a BEFORE_BUILD (a build directory holding actorps and actorps_bench_loop), every run
# is made with both builds, alternated (ABBA by repeat), and the JSON holds the before side's
# figures under "before" with each configuration's after/before ratio.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
out=""
total=2000
repeats=3
before=""
while getopts "o:b:c:r:a:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    c) total="$OPTARG" ;;
    r) repeats="$OPTARG" ;;
    a) before="$(realpath -m "$OPTARG")" ;;
    *) usage ;;
  esac
done
out="$(realpath -m "${out:-$build/bench/throughput.json}")"
if (( total % 4 != 0 || total <= 0 || repeats <= 0 )); then
  echo "throughput.sh: -c must be a positive multiple of 4 and -r positive" >&2
  exit 2
fi

builds=("$build")
[[ -n "$before" ]] && builds+=("$before")
for exe in "$build/actorps" "$build/actorps_bench_loop" \
           ${before:+"$before/actorps" "$before/actorps_bench_loop"}; do
  if [[ ! -x "$exe" ]]; then
    echo "throughput.sh: $exe is missing; build first:" >&2
    echo "  cmake -S $root -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build -j2" >&2
    exit 1
  fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
runs="$tmp/runs.jsonl"  # one line per run: {"config":..., <summary or plain-loop object>}
load_before="$(cut -d' ' -f1 /proc/loadavg)"
TIMEFORMAT='%U %S'
cpu_s() { tail -n 1 "$1" | awk '{ printf "%.3f", $1 + $2 }'; }

configs=("1 2" "2 2" "4 2" "1 1")
budget=$((180 * ${#builds[@]}))  # seconds for the whole script; each run gets what is left (at most 60)
remaining() { local left=$((budget - SECONDS)); echo $((left < 60 ? (left > 1 ? left : 1) : 60)); }
for ((r = 1; r <= repeats; ++r)); do
  sides=("${builds[@]}")
  (( r % 2 == 0 && ${#builds[@]} == 2 )) && sides=("${builds[1]}" "${builds[0]}")
  for b in "${sides[@]}"; do
    side=""; [[ "$b" != "$build" ]] && side="before_"
    for c in "${configs[@]}"; do
      read -r w ps <<<"$c"
      name="${side}w${w}_ps${ps}"
      metrics="$tmp/$name.$r.jsonl"
      echo "throughput.sh: run $r/$repeats $name ($((total / w)) clocks per worker, load $(cut -d' ' -f1 /proc/loadavg))" >&2
      # bash's time: user + sys of the process and every thread it ran (TIMEFORMAT below).
      if ! { time timeout "$(remaining)" "$b/actorps" simulate --workers "$w" --ps "$ps" \
               --steps $((total / w)) --eval-every 0 --no-progress --metrics "$metrics" \
               >/dev/null 2>"$tmp/stderr"; } 2>"$tmp/cpu"; then
        cat "$tmp/stderr" >&2
        echo "throughput.sh: $name run $r failed or ran out of time (${budget} s budget; busy machine? try -c)" >&2
        exit 1
      fi
      summary="$(grep '"event":"summary"' "$metrics")" \
        || { echo "throughput.sh: $name run $r wrote no summary" >&2; exit 1; }
      # The workers' own view: the staleness of the parameters each clock was computed on.
      staleness="$(python3 -c 'import json,sys; print(max([json.loads(l).get("staleness", 0) for l in open(sys.argv[1]) if "\"event\":\"train\"" in l] or [0]))' "$metrics")"
      bound="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["staleness_bound"])' "$summary")"
      if (( bound >= 0 && staleness > bound )); then
        echo "throughput.sh: $name run $r: a worker computed at staleness $staleness, beyond the bound $bound" >&2
        exit 1
      fi
      echo "{\"config\":\"$name\",\"result\":$summary,\"worker_max_staleness\":$staleness,\"cpu_s\":$(cpu_s "$tmp/cpu"),\"load\":$(cut -d' ' -f1 /proc/loadavg)}" >>"$runs"
    done
    echo "throughput.sh: run $r/$repeats ${side}plain loop ($total steps)" >&2
    { time timeout "$(remaining)" "$b/actorps_bench_loop" --steps "$total" >"$tmp/plain" 2>"$tmp/stderr"; } 2>"$tmp/cpu" \
      || { echo "throughput.sh: plain loop run $r failed or ran out of time" >&2; exit 1; }
    echo "{\"config\":\"${side}plain_loop\",\"result\":$(cat "$tmp/plain"),\"cpu_s\":$(cpu_s "$tmp/cpu")}" >>"$runs"
  done
done

python3 - "$runs" "$out" "$total" "$repeats" "$load_before" "$before" <<'EOF'
import json, statistics, sys

runs_path, out_path, total, repeats, load_before, before = sys.argv[1:]
runs = [json.loads(line) for line in open(runs_path)]

def by(config):
    return [r["result"] for r in runs if r["config"] == config]

def extra(config, key):
    return [r[key] for r in runs if r["config"] == config]

def med(values):
    return statistics.median(values)

def cpu_us_per_sample(config):
    """Median CPU µs per sample of a configuration's runs (every run processes the same samples)."""
    return med(extra(config, "cpu_s")) / (int(total) * 64) * 1e6

result = {
    "bench": "throughput",
    "dataset": "fashion-mnist",
    "model": "784-256-128-10",
    "batch": 64,
    "mode": by("w1_ps2")[0]["mode"],
    "total_clocks": int(total),
    "samples_per_run": int(total) * 64,
    "workload": "same total samples for every W: total_clocks / W clocks per worker",
    "repeats": int(repeats),
    "loadavg_1m_before": float(load_before),
    "configs": {},
}
for name in ("w1_ps2", "w2_ps2", "w4_ps2", "w1_ps1"):
    rs = by(name)
    result["configs"][name] = {
        "workers": rs[0]["workers"],
        "ps": rs[0]["shards"],
        "clocks_per_worker": rs[0]["clocks"],
        "samples_per_s": med([r["samples_per_s"] for r in rs]),
        "runs_samples_per_s": [r["samples_per_s"] for r in rs],
        "runs_wall_s": [r["wall_s"] for r in rs],
        "final_test_accuracy": med([r["final_test_accuracy"] for r in rs]),
        "runs_cpu_s": extra(name, "cpu_s"),
        "cpu_us_per_sample": cpu_us_per_sample(name),
    }
plain = by("plain_loop")
result["plain_loop"] = {
    "steps": plain[0]["steps"],
    "samples_per_s": med([p["samples_per_s"] for p in plain]),
    "runs_samples_per_s": [p["samples_per_s"] for p in plain],
    "step_ms": med([p["step_ms"] for p in plain]),
    "runs_cpu_s": extra("plain_loop", "cpu_s"),
    "cpu_us_per_sample": cpu_us_per_sample("plain_loop"),
}
c, base = result["configs"], result["plain_loop"]["samples_per_s"]
result["overhead_ratio_w1"] = c["w1_ps2"]["samples_per_s"] / base
result["overhead_ratio_w1_ps1"] = c["w1_ps1"]["samples_per_s"] / base
result["speedup_w2_vs_w1"] = c["w2_ps2"]["samples_per_s"] / c["w1_ps2"]["samples_per_s"]
result["speedup_w4_vs_w1"] = c["w4_ps2"]["samples_per_s"] / c["w1_ps2"]["samples_per_s"]
for name in result["configs"]:
    result["configs"][name]["worker_max_staleness"] = max(extra(name, "worker_max_staleness"))
    result["configs"][name]["runs_loadavg_1m"] = extra(name, "load")
if before:
    b = {"build": before, "configs": {}}
    for name in ("w1_ps2", "w2_ps2", "w4_ps2", "w1_ps1"):
        rs = by("before_" + name)
        b["configs"][name] = {
            "samples_per_s": med([r["samples_per_s"] for r in rs]),
            "runs_samples_per_s": [r["samples_per_s"] for r in rs],
            "final_test_accuracy": med([r["final_test_accuracy"] for r in rs]),
            "worker_max_staleness": max(extra("before_" + name, "worker_max_staleness")),
            "runs_loadavg_1m": extra("before_" + name, "load"),
            "runs_cpu_s": extra("before_" + name, "cpu_s"),
            "cpu_us_per_sample": cpu_us_per_sample("before_" + name),
        }
        result["configs"][name]["after_over_before"] = (
            result["configs"][name]["samples_per_s"] / b["configs"][name]["samples_per_s"])
        result["configs"][name]["cpu_after_over_before"] = (
            result["configs"][name]["cpu_us_per_sample"] / b["configs"][name]["cpu_us_per_sample"])
    bp = by("before_plain_loop")
    b["plain_loop"] = {"samples_per_s": med([p["samples_per_s"] for p in bp]),
                       "runs_samples_per_s": [p["samples_per_s"] for p in bp],
                       "cpu_us_per_sample": cpu_us_per_sample("before_plain_loop")}
    bc, bbase = b["configs"], b["plain_loop"]["samples_per_s"]
    b["overhead_ratio_w1"] = bc["w1_ps2"]["samples_per_s"] / bbase
    b["over_plain_loop"] = {n: bc[n]["samples_per_s"] / bbase for n in bc}
    b["cpu_over_plain_loop"] = {n: bc[n]["cpu_us_per_sample"] / b["plain_loop"]["cpu_us_per_sample"]
                                for n in bc}
    result["before"] = b
result["over_plain_loop"] = {n: c[n]["samples_per_s"] / base for n in c}
# CPU per sample over the plain loop's: above 1, the runtime spends more CPU on a sample.
result["cpu_over_plain_loop"] = {n: c[n]["cpu_us_per_sample"] / result["plain_loop"]["cpu_us_per_sample"]
                                 for n in c}
result["loadavg_1m_after"] = float(open("/proc/loadavg").read().split()[0])
with open(out_path, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print(json.dumps(result, indent=2))
EOF
echo "throughput.sh: wrote $out" >&2
