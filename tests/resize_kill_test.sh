#!/usr/bin/env bash
# The process killed (SIGKILL: the chief with every role) while a planned resize moves the shards,
# and once the first checkpoint after it is written; the same command with --resume goes on from
# the newest complete checkpoint and exports the model.capnp, byte for byte, of the run never
# resized (sync): killed at the move it goes on from the 2-shard checkpoint at the move's clock
# 30 (written before the move), cut into 3 shards as it is restored; killed after it, it goes on
# from the 3-shard checkpoint at clock 40 on 3 shards, the resize counted as made. For a sparse
# model (lr on Criteo-format data) and a dense one (the MLP).
# usage: tests/resize_kill_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
. "$root/tests/resize_runs_lib.sh" resize-kill
# worker 0 slowed: the chief keeps up with every checkpoint, and a kill lands between them
flags=(--batch 64 --steps 60 --mode sync --eval-every 0 --no-progress --workers 2 --ps 2
       --slow worker:0=15)
resized=(--resize ps=3@clock=30 --checkpoint-every 10 --keep 10)

resume() {  # NAME KIND
  local name=$1 kind=$2
  local -n model=$kind
  "$bin" simulate "${model[@]}" "${flags[@]}" "${resized[@]}" --checkpoint-dir "$dir/$name.ckpt" \
    --export-dir "$dir/$name.export" --resume "$dir/$name.ckpt" > "$dir/$name.resumed.log" 2>&1 \
    || { cat "$dir/$name.resumed.log" >&2; fail "$name: the resumed run failed"; }
}

for kind in sparse dense; do
  declare -n model=$kind
  "$bin" simulate "${model[@]}" "${flags[@]}" --export-dir "$dir/$kind.never.export" \
    > "$dir/$kind.never.log" 2>&1 || { cat "$dir/$kind.never.log" >&2; fail "$kind never resized"; }
  never=$dir/$kind.never.export/1/model.capnp

  # killed as the move begins
  name=$kind.moving
  killed_run "$name" logged "$dir/$name.log" "resizing at clock 30" -- "${model[@]}" "${flags[@]}" \
    "${resized[@]}" --checkpoint-dir "$dir/$name.ckpt" --export-dir "$dir/$name.export"
  resume "$name" "$kind"
  log=$dir/$name.resumed.log
  grep -q "resuming from .*ckpt-000000000030 (clock 30)" "$log" \
    || { cat "$log" >&2; fail "$name did not resume from clock 30"; }
  grep -q "resume: --resize ps=3@clock=30 is made by restoring the checkpoint of its clock 30" \
    "$log" || fail "$name does not say the restore makes the move"
  grep -q "the checkpoint's 2 shards are cut into 3" "$log" || fail "$name did not move again"
  cmp "$never" "$dir/$name.export/1/model.capnp" \
    || fail "$name exports another model than the run never resized"

  # killed once the first checkpoint after the move is complete
  name=$kind.moved
  killed_run "$name" test -f "$dir/$name.ckpt/ckpt-000000000040/MANIFEST.json" -- "${model[@]}" \
    "${flags[@]}" "${resized[@]}" --checkpoint-dir "$dir/$name.ckpt" --export-dir "$dir/$name.export"
  grep -q "resized from 2 to 3 shards at clock 30" "$dir/$name.log" \
    || fail "$name was killed before its move"
  resume "$name" "$kind"
  log=$dir/$name.resumed.log
  grep -q "resuming from .*ckpt-000000000040 (clock 40)" "$log" \
    || { cat "$log" >&2; fail "$name did not resume from clock 40"; }
  grep -q "resume: --resize ps=3@clock=30 was made before clock 40" "$log" \
    || fail "$name does not say the resize was made"
  grep -q "3 shards" "$log" || fail "$name did not go on at 3 shards"
  ! grep -q "skipped" "$log" || fail "$name skipped its resize"
  cmp "$never" "$dir/$name.export/1/model.capnp" \
    || fail "$name exports another model than the run never resized"
  unset -n model
done
echo "resize kill: PASS"
