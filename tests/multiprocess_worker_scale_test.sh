#!/usr/bin/env bash
# Workers (and shards) joining and leaving a running multi-process job (one process per task on
# 127.0.0.1, mutual TLS). A worker task started with a cluster spec that lists it past the
# job's workers joins as a spare; `actorps scale --workers 3` takes it in with its share of the
# minibatches no worker has trained, `--workers 2` stops it again once it trained its clocks
# before the change: it exits 0, as every task does. The workers pause at the clock of each
# change, told so by the chief, so the epoch trains every planned minibatch exactly once (the
# summary's samples are the planned samples), in sync and in ssp with a straggler; in sync the
# exported model is byte-identical to a one-process run with the same --resize plan, and the
# run's checkpoints (--checkpoint-dir) hold the change: the one taken while 3 workers trained,
# resumed by 3 worker processes, trains the model one process resumed from it trains.
# usage: tests/multiprocess_worker_scale_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-wscale.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 1  # c.json; grown.json adds ps:2 and worker:2; certificates; $net
train=(--dataset synthetic --model 784-64-10 --batch 32 --steps 300 --eval-every 0 --seed 5
       --no-progress)
spare() {  # spare NAME TASK: TASK of grown.json joins as a spare
  "$bin" "${2%%:*}" --cluster "$dir/grown.json" --task "$2" "${net[@]}" $(tls "$2") \
    > "$dir/$1-$2.log" 2>&1 &
  pids+=($!); eval "pid_${1}_${2/:/_}=$!"
  await_event "$dir/$1.jsonl" "\"event\":\"spare\".*\"task\":\"$2\""
}
scale() {  # scale FLAGS...: fails unless the chief did it
  ask_scale admin:0 "$@"
  [ "$scaled" = 0 ] || fail "scale $*: $said"
}
samples_planned() {  # samples_planned NAME: the summary's samples are the planned samples
  local line
  line=$(grep '"event":"summary"' "$dir/$1.jsonl") || fail "$1: no summary event"
  [ "$(summary_field "$line" samples)" = "$(summary_field "$line" planned_samples)" ] \
    || fail "$1: samples are not the planned samples: $line"
  [ "$(summary_field "$line" samples)" = 19200 ] || fail "$1: samples: $line"
}

resize_clocks() {  # resize_clocks NAME: the clock of each change, in order
  grep '"event":"resize"' "$dir/$1.jsonl" | sed -E 's/.*"clock":([0-9]+).*/\1/'
}

echo "== sync: workers 2 -> 3 -> 2 (a spare worker:2 taken in, then stopped), checkpointed"
start_job sync --mode sync --slow worker:0=40 --checkpoint-dir "$dir/sync.ckpt" \
  --checkpoint-every 10 --keep 100 --checkpoint-writer chief
spare sync worker:2
await_training "$dir/sync.jsonl"
set +e; said=$("$bin" scale --chief "$chief_addr" --workers 4 --timeout 60 $(tls admin:0) 2>&1); refused=$?; set -e
[ "$refused" = 2 ] && grep -q "no spare worker:3" <<< "$said" || fail "--workers 4: exit $refused: $said"
scale --workers 3
grep -q '"event":"resize","from":2,"to":2,"workers_from":2,"workers_to":3' "$dir/sync.jsonl" \
  || fail "sync: no resize event 2 -> 3 workers"
mid=$(( ($(resize_clocks sync) / 10 + 1) * 10 ))  # the first checkpoint of 3 workers
await_event "$dir/sync.jsonl" "\"event\":\"checkpoint\",\"clock\":$mid,"
scale --workers 2
grep -q '"event":"resize","from":2,"to":2,"workers_from":3,"workers_to":2' "$dir/sync.jsonl" \
  || fail "sync: no resize event 3 -> 2 workers"
await_exit "$pid_sync_worker_2" 60
[ "$status" = 0 ] || fail "worker:2, removed by the shrink, exited $status"
all_exit_0 sync ps:0 ps:1 worker:0 worker:1
samples_planned sync
plan=$(resize_clocks sync | paste -sd' ')
read -r c1 c2 <<< "$plan"
[ -n "${c2:-}" ] || fail "sync: the changes' clocks: $plan"
"$bin" simulate --ps 2 --workers 2 --mode sync "${train[@]}" --resize "workers=3@clock=$c1" \
  --resize "workers=2@clock=$c2" --export-dir "$dir/one-export" --metrics "$dir/one.jsonl" \
  > "$dir/one.log" 2>&1 || fail "the one-process run failed"
samples_planned one
cmp "$dir/one-export/1/model.capnp" "$dir/sync-export/1/model.capnp" \
  || fail "the model differs from the one-process run resized at clocks $c1 and $c2"
# a checkpoint taken while 3 workers trained, resumed by 3 worker processes and in one process:
# the same model (each worker goes on with its share of what no worker had trained)
(( mid < c2 )) || fail "no checkpoint between the changes at clocks $c1 and $c2"
ckpt=$(printf '%s/sync.ckpt/ckpt-%012d' "$dir" "$mid")
[ -f "$ckpt/MANIFEST.json" ] || fail "no checkpoint at clock $mid: $(ls "$dir/sync.ckpt")"
"$root/scripts/launch_local.sh" --insecure --no-evaluator --binary "$bin" --ps 2 --workers 3 -- \
  --mode sync "${train[@]}" --resume "$ckpt" --export-dir "$dir/resumed-export" \
  > "$dir/resumed.log" 2>&1 || { cat "$dir/resumed.log" >&2; fail "the 3-process resume failed"; }
grep -q "resuming from .*(clock $mid)" "$dir/resumed.log" || fail "the processes did not resume at $mid"
"$bin" simulate --ps 2 --workers 3 --mode sync "${train[@]}" --resume "$ckpt" \
  --export-dir "$dir/resumed-one-export" > "$dir/resumed-one.log" 2>&1 \
  || { cat "$dir/resumed-one.log" >&2; fail "the one-process resume failed"; }
cmp "$dir/resumed-one-export/1/model.capnp" "$dir/resumed-export/1/model.capnp" \
  || fail "3 worker processes resumed at clock $mid train another model than one process"

echo "== ssp, a straggler: shards and workers 2 -> 3 -> 2 together"
# Ports of their own: those of the phase above lay free for a while (launch_local.sh, or a test
# running beside this one, may have taken one meanwhile: seen as worker:2 unable to listen).
scale_clusters 1 1
start_job ssp --mode ssp --staleness 3 --slow worker:0=30
spare ssp ps:2
spare ssp worker:2
await_training "$dir/ssp.jsonl"
scale --ps 3 --workers 3
scale --ps 2 --workers 2
all_exit_0 ssp ps:0 ps:1 ps:2 worker:0 worker:1 worker:2
[ "$(grep -c '"event":"resize"' "$dir/ssp.jsonl")" = 2 ] || fail "ssp: not 2 resize events"
grep '"event":"resize"' "$dir/ssp.jsonl" | grep -qv '"retrained_samples":0' \
  && fail "ssp: a change trained samples again: $(grep '"event":"resize"' "$dir/ssp.jsonl")"
samples_planned ssp

no_listeners "$dir/grown.json"
echo "multi-process worker scale: 2 -> 3 -> 2 workers, sync model as in one process, ssp samples as planned"
