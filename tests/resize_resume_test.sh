#!/usr/bin/env bash
# A checkpoint restores into another number of shards: sync runs checkpointed at 2 shards (clock
# 20 of 40), resumed at 3 and at 1, export the model.capnp byte for byte of the same run resumed
# at 2 (and of the run never stopped): the shard count does not change the math. For a sparse
# model (lr on Criteo-format data) and a dense one (the MLP); a shard lost in the resumed 3-shard
# run before its own first checkpoint goes back to the 2-shard one, cut again; 3 ps processes
# (scripts/launch_local.sh) resume it too. (Another number of workers: worker_resume_test.sh.)
# usage: tests/resize_resume_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-resize.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" gen-data criteo --out "$dir/criteo" --rows 4000 --test-rows 400 > /dev/null
sparse=(--model lr --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv"
        --admit-after 2)
dense=(--model 784-32-10 --dataset synthetic --synthetic-rows 4096)
run() {  # NAME KIND FLAGS...: a sync run of 40 clocks on 2 workers, exported at its end
  local name=$1 kind=$2
  shift 2
  local -n model=$kind
  "$bin" simulate "${model[@]}" --batch 64 --steps 40 --mode sync --eval-every 0 --no-progress \
    --workers 2 --export-dir "$dir/$name.export" --metrics "$dir/$name.jsonl" "$@" \
    > "$dir/$name.log" 2>&1 || { cat "$dir/$name.log" >&2; fail "run $name failed"; }
}
for kind in sparse dense; do
  run "$kind" "$kind" --ps 2 --checkpoint-dir "$dir/$kind.ckpt" --checkpoint-every 20 --keep 10
  ckpt=$dir/$kind.ckpt/ckpt-000000000020
  [ -f "$ckpt/MANIFEST.json" ] || fail "$kind: no checkpoint at clock 20"
  for ps in 2 3 1; do
    run "$kind-$ps" "$kind" --ps "$ps" --resume "$ckpt"
    grep -q "resumed from clock 20" "$dir/$kind-$ps.log" || fail "$kind-$ps did not resume at 20"
    cmp "$dir/$kind.export/1/model.capnp" "$dir/$kind-$ps.export/1/model.capnp" \
      || fail "$kind resumed at $ps shards exports another model than the run never stopped"
  done
  grep -q "the checkpoint's 2 shards are cut into 3" "$dir/$kind-3.log" \
    || fail "$kind-3 does not say it cut the checkpoint"
  # lost before the resumed run wrote a checkpoint of its own: back to the 2-shard one, cut again
  run "$kind-3-lost" "$kind" --ps 3 --resume "$ckpt" --checkpoint-dir "$dir/$kind-3-lost.ckpt" \
    --checkpoint-every 30 --kill ps:2@clock=25
  grep -q '"event":"recovery"\|restoring every shard' "$dir/$kind-3-lost.log" "$dir/$kind-3-lost.jsonl" \
    || fail "$kind-3-lost did not go back to a checkpoint"
  cmp "$dir/$kind.export/1/model.capnp" "$dir/$kind-3-lost.export/1/model.capnp" \
    || fail "$kind resumed at 3 shards and rolled back exports another model"
done

# one process per task: 3 ps tasks resume the 2-shard checkpoint
"$root/scripts/launch_local.sh" --insecure --binary "$bin" --ps 3 --workers 2 -- "${sparse[@]}" --batch 64 \
  --steps 40 --mode sync --eval-every 0 --no-progress --resume "$dir/sparse.ckpt/ckpt-000000000020" \
  --export-dir "$dir/sparse-procs.export" > "$dir/sparse-procs.log" 2>&1 \
  || { cat "$dir/sparse-procs.log" >&2; fail "the 3-process resume failed"; }
[ "$(grep -c 'ps:[0-2]: restored to the checkpoint at clock 20' "$dir/sparse-procs.log")" = 3 ] \
  || fail "not every ps task was restored"
cmp "$dir/sparse.export/1/model.capnp" "$dir/sparse-procs.export/1/model.capnp" \
  || fail "3 ps tasks resumed from 2 shards export another model"

# the 3-shard run's checkpoint records its placement and resumes at 2 as well
run "sparse-3w" sparse --ps 3 --resume "$dir/sparse.ckpt/ckpt-000000000020" \
  --checkpoint-dir "$dir/sparse-3w.ckpt" --checkpoint-every 30
run "sparse-3-2" sparse --ps 2 --resume "$dir/sparse-3w.ckpt/ckpt-000000000030"
cmp "$dir/sparse.export/1/model.capnp" "$dir/sparse-3-2.export/1/model.capnp" \
  || fail "2 -> 3 -> 2 shards exports another model"

# admission counted in a sketch (--admission-memory), which cannot be split by key: each new
# shard takes the counters' maximum over the old shards that held its buckets (never below a
# key's true count), so keys may be admitted a little earlier than in the run at 2 shards
auc() { grep -o 'final test auc [0-9.]*' "$1" | grep -o '[0-9.]*$'; }
run sketch sparse --ps 2 --admission-memory 4096 --checkpoint-dir "$dir/sketch.ckpt" \
  --checkpoint-every 20
run sketch-3 sparse --ps 3 --admission-memory 4096 --resume "$dir/sketch.ckpt/ckpt-000000000020"
grep -q "resumed from clock 20" "$dir/sketch-3.log" || fail "the sketch run did not resume at 3"
awk -v a="$(auc "$dir/sketch.log")" -v b="$(auc "$dir/sketch-3.log")" \
  'BEGIN { d = a - b; exit !(a > 0.55 && (d < 0 ? -d : d) < 0.02) }' \
  || fail "the sketch run resumed at 3 shards ends at AUC $(auc "$dir/sketch-3.log"), not near $(auc "$dir/sketch.log")"

echo "resize on resume: 2 -> 3, 1 and 2 -> 3 -> 2 shards export the same model, sparse and dense"
