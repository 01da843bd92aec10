#!/usr/bin/env bash
# --wire-precision fp32 against bf16 on the default Fashion-MNIST run (2 shards, 2 workers, ssp
# 2, 5 epochs): final test accuracy, samples/s and the bytes the shards counted in the pushes
# they accepted (the summary's pushed_bytes, kept by the shards: not estimated), per clock.
# `actorps simulate` alternates fp32 and bf16, ROUNDS rounds (default 3), so that the machine's
# load spreads over both; then one process per task (scripts/launch_local.sh), PROCESS_ROUNDS
# rounds (default 1) of each. The load average is recorded with each run. When built,
# actorps_bench_wire_precision adds what one shard's push costs to encode and decode ("codec").
# usage: scripts/bench/wire_precision.sh [-o FILE] [-r ROUNDS] [-p PROCESS_ROUNDS] [-b BUILD_DIR] [-- flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/wire_precision.json rounds=3 process_rounds=1 build=build
while getopts "o:r:p:b:" opt; do
  case $opt in
    o) out=$OPTARG ;; r) rounds=$OPTARG ;; p) process_rounds=$OPTARG ;; b) build=$OPTARG ;;
    *) sed -n 8p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[[ $rounds =~ ^[1-9][0-9]*$ && $process_rounds =~ ^[0-9]+$ ]] \
  || { echo "wire_precision.sh: -r must be positive, -p 0 or more" >&2; exit 2; }
binary=$(realpath "$build/actorps")
[ -x "$binary" ] || { echo "$binary is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one_run() {  # KIND PRECISION ROUND FLAGS...
  local kind=$1 precision=$2 round=$3 run="$tmp/$1-$2-$3"
  shift 3
  mkdir -p "$run"
  uptime > "$run/load"
  if [ "$kind" = simulate ]; then
    "$binary" simulate --ps 2 --workers 2 --no-progress --wire-precision "$precision" \
      --metrics "$run/metrics.jsonl" "$@" > "$run/log" 2>&1
  else
    scripts/launch_local.sh --insecure --ps 2 --workers 2 --binary "$binary" -- --no-progress \
      --wire-precision "$precision" --metrics "$run/metrics.jsonl" "$@" > "$run/log" 2>&1
  fi
  echo "round $round $kind $precision: $(grep -Eo '= [0-9]+ samples/s' "$run/log" | tail -1)" >&2
}

codec="$build/actorps_bench_wire_precision"
if [ -x "$codec" ]; then "$codec" > "$tmp/codec.json"; else echo '{}' > "$tmp/codec.json"; fi

for ((round = 1; round <= rounds; round++)); do
  for precision in fp32 bf16; do one_run simulate "$precision" "$round" "$@"; done
done
for ((round = 1; round <= process_rounds; round++)); do
  for precision in fp32 bf16; do one_run processes "$precision" "$round" "$@"; done
done

"$python" - "$tmp" "$out" "$*" <<'PY'
import glob, json, os, re, statistics, sys
tmp, out, flags = sys.argv[1], sys.argv[2], sys.argv[3]
runs = []
for d in sorted(glob.glob(os.path.join(tmp, "*-*-*"))):
    if not os.path.isdir(d):
        continue
    kind, precision, round_ = os.path.basename(d).split("-")
    summary = None
    for line in open(os.path.join(d, "metrics.jsonl")):
        event = json.loads(line)
        if event.get("event") == "summary":
            summary = event
    if summary is None:
        sys.exit(f"{d}: no summary:\n" + open(os.path.join(d, "log")).read()[-2000:])
    load = float(re.search(r"load average: ([0-9.]+)", open(os.path.join(d, "load")).read()).group(1))
    runs.append({"kind": kind, "precision": precision, "round": int(round_),
                 "final_test_accuracy": summary["final_test_accuracy"],
                 "samples_per_s": summary["samples_per_s"],
                 "clocks": summary["clocks"],
                 "pushed_bytes": summary["pushed_bytes"],
                 "pushed_bytes_per_clock": summary["pushed_bytes"] / summary["clocks"],
                 "load_average_1min_before": load})
medians = {}
for kind in ("simulate", "processes"):
    for precision in ("fp32", "bf16"):
        these = [r for r in runs if r["kind"] == kind and r["precision"] == precision]
        if these:
            medians[f"{kind}_{precision}"] = {
                k: statistics.median(r[k] for r in these)
                for k in ("final_test_accuracy", "samples_per_s", "pushed_bytes_per_clock")}
ratios = {}
for kind in ("simulate", "processes"):
    a, b = medians.get(f"{kind}_fp32"), medians.get(f"{kind}_bf16")
    if a and b:
        ratios[kind] = {"samples_per_s_bf16_over_fp32": b["samples_per_s"] / a["samples_per_s"],
                        "pushed_bytes_bf16_over_fp32": b["pushed_bytes_per_clock"] / a["pushed_bytes_per_clock"],
                        "accuracy_bf16_minus_fp32": b["final_test_accuracy"] - a["final_test_accuracy"]}
result = {"benchmark": "wire_precision", "flags": flags, "runs": runs, "medians": medians,
          "ratios": ratios, "codec": json.load(open(os.path.join(tmp, "codec.json")))}
with open(out, "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps({"medians": medians, "ratios": ratios, "codec": result["codec"]}, indent=1))
PY
