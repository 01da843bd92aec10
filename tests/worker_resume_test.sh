#!/usr/bin/env bash
# A checkpoint resumed by another number of workers (a stop-the-world change of workers), and a
# run whose workers changed while it trained (--resize workers=N@clock=C) checkpointed, killed
# and resumed. Sync, for a sparse model (lr on Criteo-format data) and a dense one (the MLP):
#   - `--resume ckpt-20 --workers 3` of a 2-worker run exports the model.capnp, byte for byte,
#     of the run that changed from 2 to 3 workers at clock 20 while it trained (the same
#     minibatches not trained yet are shared out the same way, the rate per minibatch and the
#     schedule's place kept), and trains as many rows as the run never changed;
#   - that live change with --checkpoint-dir, killed (SIGKILL) once its checkpoint at 40 is
#     complete: the same command with --resume exports the same model again;
#   - that 3-worker checkpoint (its workers' plans) resumed by 2 workers trains every row once.
# A directory read as a stream keeps its number of workers (both refused, saying why).
# usage: tests/worker_resume_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
. "$root/tests/resize_runs_lib.sh" worker-resume
flags=(--batch 64 --steps 60 --mode sync --eval-every 0 --no-progress --ps 2)
run() {  # NAME KIND FLAGS...
  local name=$1 kind=$2
  shift 2
  local -n model=$kind
  "$bin" simulate "${model[@]}" "${flags[@]}" --export-dir "$dir/$name.export" "$@" \
    > "$dir/$name.log" 2>&1 || { cat "$dir/$name.log" >&2; fail "run $name failed"; }
}
samples() { grep -o '[0-9]* clocks, [0-9]* samples' "$1" | grep -o '[0-9]* samples' | grep -o '[0-9]*'; }
same() {  # A B: the two runs export one model
  cmp "$dir/$1.export/1/model.capnp" "$dir/$2.export/1/model.capnp" \
    || fail "$2 exports another model than $1"
}

for kind in sparse dense; do
  run "$kind" "$kind" --workers 2 --checkpoint-dir "$dir/$kind.ckpt" --checkpoint-every 10 \
    --keep 10 --slow worker:0=5
  [ -f "$dir/$kind.ckpt/ckpt-000000000020/MANIFEST.json" ] || fail "$kind: no checkpoint at 20"
  planned=$(samples "$dir/$kind.log")
  [ "$planned" = 7680 ] || fail "$kind trained $planned samples, not 7680"
  run "$kind-live" "$kind" --workers 2 --resize workers=3@clock=20

  # stop-the-world: 2 workers' checkpoint resumed by 3
  run "$kind-resumed" "$kind" --workers 3 --resume "$dir/$kind.ckpt/ckpt-000000000020"
  grep -q "the 80 minibatches the checkpoint's 2 workers had not trained are shared out among 3" \
    "$dir/$kind-resumed.log" || fail "$kind-resumed does not say how it shared the data out"
  same "$kind-live" "$kind-resumed"
  [ "$(samples "$dir/$kind-resumed.log")" = "$planned" ] || fail "$kind-resumed trained another count"

  # the live change checkpointed, killed after its checkpoint at 40, resumed by the same command
  changed=(--workers 2 --resize workers=3@clock=20 --checkpoint-dir "$dir/$kind-ck.ckpt"
           --checkpoint-every 10 --keep 10 --slow worker:0=15)
  declare -n model=$kind
  killed_run "$kind-ck" test -f "$dir/$kind-ck.ckpt/ckpt-000000000040/MANIFEST.json" -- \
    "${model[@]}" "${flags[@]}" "${changed[@]}" --export-dir "$dir/$kind-ck.export"
  unset -n model
  run "$kind-ck" "$kind" "${changed[@]}" --resume "$dir/$kind-ck.ckpt"
  grep -q "resuming from .*ckpt-000000000040 (clock 40)" "$dir/$kind-ck.log" \
    || fail "$kind-ck did not resume from clock 40"
  same "$kind-live" "$kind-ck"
  [ "$(samples "$dir/$kind-ck.log")" = "$planned" ] || fail "$kind-ck trained another count"

  # its 3 workers' plans resumed by 2
  run "$kind-ck2" "$kind" --workers 2 --resume "$dir/$kind-ck.ckpt/ckpt-000000000040"
  [ "$(samples "$dir/$kind-ck2.log")" = "$planned" ] || fail "$kind-ck2 trained another count"
done

# a directory read as a stream keeps its number of workers
mkdir "$dir/days"
cp "$dir/criteo/train.tsv" "$dir/days/day-0.tsv"
days=(--model lr --dataset "criteo:$dir/days" --test "$dir/criteo/test.tsv" --admit-after 2)
"$bin" simulate "${days[@]}" "${flags[@]}" --workers 2 --checkpoint-dir "$dir/days.ckpt" \
  --checkpoint-every 20 > "$dir/days.log" 2>&1 || { cat "$dir/days.log" >&2; fail "days run failed"; }
set +e
"$bin" simulate "${days[@]}" "${flags[@]}" --workers 3 --resume "$dir/days.ckpt/ckpt-000000000020" \
  > "$dir/days-3.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] || fail "--workers 3 on a streamed directory's checkpoint exited $status, not 2"
grep -q "the checkpoint has 2 workers, this run 3" "$dir/days-3.log" \
  || { cat "$dir/days-3.log" >&2; fail "the refusal does not say why"; }
set +e
"$bin" simulate "${days[@]}" "${flags[@]}" --workers 2 --resize workers=3@clock=20 \
  --checkpoint-dir "$dir/days-live.ckpt" > "$dir/days-live.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] || fail "a change of workers checkpointed over a streamed directory exited $status"
grep -q "workers=3@clock=20: not with --checkpoint-dir over a directory read as a stream" \
  "$dir/days-live.log" || { cat "$dir/days-live.log" >&2; fail "that refusal does not say why"; }
echo "worker resume: 2 -> 3 workers on resume equals the live change; killed and resumed too"
