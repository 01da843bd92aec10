#!/usr/bin/env bash
# Copying a change's rows ahead across processes (one process per task on 127.0.0.1, mutual
# TLS): a 2-ps sync run of a sparse model (`lr` on Criteo-format rows) with --copy-ahead always,
# a third ps task started as a spare, `actorps scale --ps 3`, then `--ps 2`. Each change is set
# the copy's lead ahead; the old shards copy the rows it moves to their new owner (the spare
# ps:2's shard at the growth, ps:0 and ps:1 at the shrink) while the run trains, and the
# hand-overs at the clock hold only what changed since. Both resize events count the copies;
# the exported model is byte-identical to the same run never scaled; every task exits 0.
# usage: tests/multiprocess_copy_ahead_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-copy-ahead.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 0  # c.json; grown.json adds ps:2; certificates; $net
"$bin" gen-data criteo --out "$dir/criteo" --rows 20000 --test-rows 400 > /dev/null
train=(--model lr --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv"
       --mode sync --batch 32 --steps 400
       --eval-every 0 --seed 5 --no-progress)
event_field() {  # event_field LINE FIELD
  "$python" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"
}

echo "== the run never scaled"
start_job plain
all_exit_0 plain ps:0 ps:1 worker:0 worker:1

echo "== the same run, 2 -> 3 -> 2 shards, each change's rows copied ahead"
start_job copied --slow worker:0=30 --copy-ahead always
start_spare_ps copied
for to in 3 2; do
  ask_scale admin:0 --ps "$to"
  [ "$scaled" = 0 ] || fail "the change to $to exited $scaled: $said"
done
await_exit "$pid_copied_ps_2" 60
[ "$status" = 0 ] || fail "ps:2, removed by the shrink, exited $status"
all_exit_0 copied ps:0 ps:1 worker:0 worker:1

[ "$(grep -c "copying ahead the rows the resize at clock" "$dir/copied-chief.log")" = 2 ] \
  || fail "the chief did not copy ahead twice"
for change in '"from":2,"to":3' '"from":3,"to":2'; do
  line=$(grep "\"event\":\"resize\",$change" "$dir/copied.jsonl") || fail "no resize event $change"
  copied=$(event_field "$line" copied_ahead_bytes)
  handed=$(event_field "$line" handed_over_bytes)
  [ "$copied" -gt 0 ] && [ "$(event_field "$line" copies_ahead)" -gt 0 ] \
    || fail "nothing copied ahead: $line"
  echo "  $change: $copied bytes copied ahead, $handed handed over at the clock"
done
line=$(grep '"event":"summary"' "$dir/copied.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 400 ] || fail "clocks: $line"
cmp "$dir/plain-export/1/model.capnp" "$dir/copied-export/1/model.capnp" \
  || fail "the scaled run's model differs from the run never scaled"
no_listeners "$dir/grown.json"
echo "multi-process copy ahead: 2 -> 3 -> 2 shards, rows copied ahead, the model byte-identical"
