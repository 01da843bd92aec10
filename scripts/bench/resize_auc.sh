#!/usr/bin/env bash
# Usage: scripts/bench/resize_auc.sh [-o FILE] [-b BUILD_DIR] [-n ROWS] [-p PAIRS]
#
# What a live resize costs in accuracy: one epoch on 2 shards and 2 workers, never resized
# against resized to 4 shards and 4 workers at a quarter of the epoch and to 3 and 3 at its half
# (`--resize ps=4,workers=4@clock=E/4 --resize ps=3,workers=3@clock=E/2`, E the epoch's clocks
# on 2 workers), in ssp and async, for the CTR example (`dlrm` on ROWS `gen-data criteo` rows)
# and `sparse-lr` on ROWS `gen-data libsvm` rows (default 400 000 each, seed 5, test rows 20 000).
# PAIRS pairs per case (default 3), the never-resized run and the resized one alternated. Each
# run's test AUC, samples and planned samples (equal when every minibatch was trained once),
# samples/s and its resize events go to the JSON (default BUILD_DIR/bench/resize_auc.json), with
# each case's largest |AUC resized - AUC never| over its pairs. About 15 min at the defaults on
# 2 cores; `-n 20000 -p 1` takes a minute.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" rows=400000 pairs=3
while getopts "o:b:n:p:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) rows="$OPTARG" ;;
    p) pairs="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
if ! [[ "$rows" =~ ^[0-9]+$ && "$pairs" =~ ^[0-9]+$ ]] || (( rows < 10000 || pairs < 1 )); then
  echo "resize_auc.sh: -n must be 10000 or more, -p 1 or more" >&2
  exit 2
fi
out="$(realpath -m "${out:-$build/bench/resize_auc.json}")"
mkdir -p "$(dirname "$out")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps"
require_bench "$sim"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$sim" gen-data criteo --out "$tmp/criteo" --rows "$rows" --test-rows 20000 --seed 5 >/dev/null
"$sim" gen-data libsvm --out "$tmp/libsvm" --rows "$rows" --test-rows 20000 --seed 5 >/dev/null
declare -A data=(
  [dlrm]="--model dlrm --dataset criteo:$tmp/criteo/train.tsv --test $tmp/criteo/test.tsv"
  [sparse-lr]="--model sparse-lr --dataset libsvm:$tmp/libsvm/train.libsvm --test $tmp/libsvm/test.libsvm")

# run MODEL MODE PAIR RESIZE...: one epoch, its metrics in $tmp/MODEL-MODE-PAIR-R.jsonl
run() {
  local model=$1 mode=$2 pair=$3 tag=$4
  shift 4
  timeout 1800 "$sim" simulate --no-progress ${data[$model]} --mode "$mode" --ps 2 --workers 2 \
    --epochs 1 --eval-every 0 --metrics "$tmp/$model-$mode-$pair-$tag.jsonl" "$@" >/dev/null 2>&1 \
    || { echo "$name: $model $mode pair $pair ($tag) failed" >&2; exit 1; }
}

for model in dlrm sparse-lr; do
  for mode in ssp async; do
    for ((pair = 1; pair <= pairs; ++pair)); do
      echo "$name: $model $mode pair $pair" >&2
      run "$model" "$mode" "$pair" still
      epoch=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
  e=json.loads(l)
  if e.get("event")=="summary": print(e["planned_clocks"])' "$tmp/$model-$mode-$pair-still.jsonl")
      run "$model" "$mode" "$pair" resized --resize "ps=4,workers=4@clock=$((epoch / 4))" \
        --resize "ps=3,workers=3@clock=$((epoch / 2))"
    done
  done
done

python3 - "$tmp" "$rows" "$pairs" >"$out" <<'PY'
import json, sys, pathlib
tmp, rows, pairs = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def events(path, kind):
    return [e for e in map(json.loads, open(path)) if e.get("event") == kind]
runs, cases = [], []
for model in ("dlrm", "sparse-lr"):
    for mode in ("ssp", "async"):
        worst = 0.0
        for pair in range(1, pairs + 1):
            auc = {}
            for tag in ("still", "resized"):
                path = tmp / f"{model}-{mode}-{pair}-{tag}.jsonl"
                s = events(path, "summary")[0]
                auc[tag] = s["final_test_auc"]
                runs.append({"model": model, "mode": mode, "pair": pair, "resized": tag == "resized",
                             "test_auc": s["final_test_auc"], "samples": s["samples"],
                             "planned_samples": s["planned_samples"],
                             "samples_per_s": s["samples_per_s"],
                             "resizes": [{k: r[k] for k in ("clock", "from", "to", "workers_from",
                                                            "workers_to", "freeze_ms")}
                                         for r in events(path, "resize")]})
            worst = max(worst, abs(auc["resized"] - auc["still"]))
        cases.append({"model": model, "mode": mode, "max_auc_difference": worst})
print(json.dumps({"bench": "resize_auc", "rows": rows, "pairs": pairs,
                  "what": "one epoch, 2 shards and 2 workers; resized 2 -> 4 -> 3 of each at a "
                          "quarter and half of the epoch against never resized",
                  "cases": cases, "runs": runs}, indent=1))
PY
echo "$name: wrote $out" >&2
