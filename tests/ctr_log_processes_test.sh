#!/usr/bin/env bash
# The CTR models on a log of one's own as processes: `actorps gen-data ctr-log` writes a log with
# numeric, categorical, multi-hot and weight columns and its schema; scripts/launch_local.sh
# trains lr, dlrm, wdl and deepfm on it (2 shards, 2 workers, the evaluator, one process each)
# for one epoch, and each run's own metrics file shows it within 0.01 AUC of the generator's
# best, with GAUC and calibration in its eval events. (In one process: ctr_log_models_test.cpp.)
# usage: tests/ctr_log_processes_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-ctr-log.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

"$bin" gen-data ctr-log --out "$dir/log" --rows 400000 --test-rows 20000 --seed 5 \
  > "$dir/gen.json" || fail "gen-data ctr-log failed"
best=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['best_test_auc'])" "$dir/gen.json")
for model in lr dlrm wdl deepfm; do
  ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 \
    --connect-timeout 30 -- --model $model --mode sync --epochs 1 \
    --dataset "tsv:$dir/log/train.tsv" --test "$dir/log/test.tsv" --schema "$dir/log/schema.json" \
    --gauc-group user --no-progress --metrics "$dir/$model.jsonl" > "$dir/$model.log" 2>&1 \
    || fail "$model: launch_local.sh exited non-zero: $(tail -20 "$dir/$model.log")"
  "$python" - "$dir/$model.jsonl" "$best" "$model" <<'PY' \
    || fail "$model missed the bar (metrics: $dir/$model.jsonl)"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
evals = [e for e in events if e["event"] == "eval"]
best, model = float(sys.argv[2]), sys.argv[3]
assert evals, "no eval events"
last = evals[-1]
print(f"{model} as processes: test AUC {last['test_auc']:.4f}, generator's best {best:.4f}, "
      f"GAUC {last['test_gauc']:.4f}, calibration {last['test_calibration']:.3f}")
assert last["test_auc"] > best - 0.01, last
assert last["test_gauc"] > 0.5, last
assert 0.8 < last["test_calibration"] < 1.25, last
PY
done
echo "ok"
