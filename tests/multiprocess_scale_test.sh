#!/usr/bin/env bash
# Growing and shrinking the shards of a running multi-process job (one process per task on
# 127.0.0.1, mutual TLS): a 2-ps sync run, a third ps task started with a cluster spec that
# lists it (it joins as a spare), `actorps scale --ps 3`, then `--ps 2`. The exported model is
# byte-identical to the same run never scaled; every task exits 0, the removed ps:2 too; a
# scale request from a worker's certificate is refused (exit 2) and counted, and those the run
# cannot take (a growth to 4 with no spare ps:3, one while a resize is under way) are refused
# with the reason. The worker processes keep their workers through both changes.
# usage: tests/multiprocess_scale_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-scale.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 0  # c.json; grown.json adds ps:2; certificates; $net
train=(--dataset synthetic --model 784-64-10 --mode sync --batch 32 --steps 300 --eval-every 0
       --seed 5 --no-progress)

echo "== refused before asking: a bad N (2), no chief there (1)"
scale_insecure() { set +e; said=$("$bin" scale --insecure --connect-timeout 1 "$@" 2>&1); scaled=$?; set -e; }
scale_insecure --chief "$chief_addr" --ps 0
[ "$scaled" = 2 ] && grep -q "must be 1 or more" <<< "$said" || fail "--ps 0: exit $scaled: $said"
scale_insecure --chief "$chief_addr" --ps 3
[ "$scaled" = 1 ] && grep -q "cannot reach $chief_addr" <<< "$said" || fail "no chief: exit $scaled: $said"

echo "== the run never scaled"
start_job plain
all_exit_0 plain ps:0 ps:1 worker:0 worker:1

echo "== the same run, grown to 3 shards and shrunk back to 2 while it trains"
start_job scaled --slow worker:0=40
start_spare_ps scaled
ask_scale worker:0 --ps 3
[ "$scaled" = 2 ] || fail "a scale request from worker:0's certificate exited $scaled: $said"
grep -q "only chief:0 and admin:0 may send it" <<< "$said" || fail "worker:0's refusal: $said"
ask_scale admin:0 --ps 4
[ "$scaled" = 2 ] || fail "a growth to 4 without a spare ps:3 exited $scaled: $said"
grep -q "no spare ps:3" <<< "$said" || fail "the growth to 4's refusal: $said"
# the growth to 3, and a second request while it is under way (the change takes some 0.5 s)
"$bin" scale --chief "$chief_addr" --ps 3 --timeout 60 $(tls admin:0) > "$dir/growth.out" 2>&1 &
growth=$!; pids+=($growth)
await_event "$dir/scaled-chief.log" "scale from 2 to 3 shards asked"
ask_scale admin:0 --ps 3
[ "$scaled" = 2 ] || fail "a request while a resize is under way exited $scaled: $said"
grep -q "a resize to 3 shards is under way already" <<< "$said" || fail "its refusal: $said"
await_exit "$growth" 60
[ "$status" = 0 ] || fail "the growth to 3 exited $status: $(cat "$dir/growth.out")"
grep -q '"event":"resize","from":2,"to":3' "$dir/scaled.jsonl" || fail "no resize event 2 -> 3"
ask_scale admin:0 --ps 2
[ "$scaled" = 0 ] || fail "the shrink to 2 exited $scaled: $said"
grep -q '"event":"resize","from":3,"to":2' "$dir/scaled.jsonl" || fail "no resize event 3 -> 2"
await_exit "$pid_scaled_ps_2" 60
[ "$status" = 0 ] || fail "ps:2, removed by the shrink, exited $status"
all_exit_0 scaled ps:0 ps:1 worker:0 worker:1

line=$(grep '"event":"summary"' "$dir/scaled.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 300 ] || fail "clocks: $line"
[ "$(summary_field "$line" refused_unauthorised)" -ge 1 ] || fail "the refusal is not counted: $line"
[ "$(grep -c '"event":"resize"' "$dir/scaled.jsonl")" = 2 ] || fail "not 2 resize events"
# each worker process kept its worker through both changes: started once, its shards reached
# anew at each change (its data not loaded again)
[ "$(grep -c '"event":"resize".*"workers_kept":2' "$dir/scaled.jsonl")" = 2 ] \
  || fail "the workers were not kept: $(grep '"event":"resize"' "$dir/scaled.jsonl")"
for w in 0 1; do
  log="$dir/scaled-worker:$w.log"
  [ "$(grep -c "starting worker" "$log")" = 1 ] || fail "worker:$w started more than once"
  [ "$(grep -c "worker $w goes on with them" "$log")" = 2 ] || fail "worker:$w: not 2 changes"
  grep -q "connected to 3 shard(s)" "$log" || fail "worker:$w never reached 3 shards"
done
cmp "$dir/plain-export/1/model.capnp" "$dir/scaled-export/1/model.capnp" \
  || fail "the scaled run's model differs from the run never scaled"
no_listeners "$dir/grown.json"
echo "multi-process scale: 2 -> 3 -> 2 shards, the model byte-identical, every task exited 0"
