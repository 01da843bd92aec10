#!/usr/bin/env bash
# Trains Fashion-MNIST in every consistency mode (4 workers, 2 shards, 3 epochs) and checks each
# reaches the promised test accuracy. Writes one JSON object per mode to the output file.
# Usage: scripts/check_accuracy.sh [-o FILE] [-t THRESHOLD] [-r REPEATS]
# (about 6 s per run on 2 cores; defaults: build/bench/accuracy.json, 0.84, 1)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/accuracy.json threshold=0.84 repeats=1
while getopts "o:t:r:" opt; do
  case $opt in
    o) out=$OPTARG ;; t) threshold=$OPTARG ;; r) repeats=$OPTARG ;;
    *) sed -n 4p "$0"; exit 2 ;;
  esac
done
[ -x build/actorps ] || { echo "build/actorps is missing: run scripts/setup.sh first" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$out"
failed=0
for mode in "sync" "ssp --staleness 0" "ssp --staleness 2" "async"; do
  for ((r = 1; r <= repeats; r++)); do
    metrics="$tmp/run.jsonl"
    build/actorps simulate --workers 4 --ps 2 --epochs 3 --mode $mode --no-progress \
      --metrics "$metrics" > /dev/null
    line=$(grep '"event":"summary"' "$metrics")
    python3 - "$line" "$mode" "$threshold" "$out" <<'PY' || failed=1
import json, sys
summary, mode, threshold, out = json.loads(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
ok = summary["final_test_accuracy"] >= threshold
row = {"mode": mode, "final_test_accuracy": summary["final_test_accuracy"],
       "max_staleness": summary["max_staleness"], "samples_per_s": summary["samples_per_s"],
       "wall_s": summary["wall_s"], "threshold": threshold, "ok": ok}
open(out, "a").write(json.dumps(row) + "\n")
print(f"{mode:18s} accuracy {row['final_test_accuracy']:.4f}  max staleness {row['max_staleness']:4d}  "
      f"{row['samples_per_s']:8.0f} samples/s  {'ok' if ok else 'BELOW ' + str(threshold)}")
sys.exit(0 if ok else 1)
PY
  done
done
exit $failed
