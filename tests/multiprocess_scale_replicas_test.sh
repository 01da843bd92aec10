#!/usr/bin/env bash
# Growing the shards of a running multi-process job with hot standbys (--replicas 1; one process
# per task on 127.0.0.1, mutual TLS, sync): a 2-ps run, a third ps task started with a cluster
# spec that lists it, `actorps scale --ps 3`. Every shard of the new size gets a standby in the
# next ps task (a `rereplicated` event for shards 0, 1 and 2 after the resize); SIGKILL of ps:2,
# the new shard's task, fails shard 2 over to its standby in ps:0 (a `failover` event, no
# rollback); a shrink is then refused with the reason (shard 2 is served by ps:0 since the
# fail-over) and the run ends: every clock, the exported model byte-identical to the same run
# never scaled nor killed, every task left exits 0.
# usage: tests/multiprocess_scale_replicas_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-scale-replicas.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 0  # c.json; grown.json adds ps:2; certificates; $net
train=(--dataset synthetic --model 784-64-10 --mode sync --batch 32 --steps 300 --eval-every 0
       --seed 5 --no-progress --replicas 1)
count() { grep -c "$2" "$1" || true; }

echo "== the run never scaled nor killed"
start_job plain
all_exit_0 plain ps:0 ps:1 worker:0 worker:1

echo "== grown to 3 shards, each with a standby; the new shard's task killed"
start_job scaled --slow worker:0=40
start_spare_ps scaled
ask_scale admin:0 --ps 3
[ "$scaled" = 0 ] || fail "the growth to 3 with --replicas 1 exited $scaled: $said"
grep -q '"event":"resize","from":2,"to":3' "$dir/scaled.jsonl" || fail "no resize event 2 -> 3"
# the standbys built for the new size: one per shard, after the resize event
for s in 0 1 2; do
  await_event "$dir/scaled.jsonl" "\"event\":\"rereplicated\",\"shard\":$s"
done
kill -9 "$pid_scaled_ps_2"
await_event "$dir/scaled.jsonl" '"event":"failover".*"shard":2'
ask_scale admin:0 --ps 2
[ "$scaled" = 2 ] || fail "a shrink after the fail-over exited $scaled: $said"
grep -q "shard 2 is served by ps:0 since a fail-over" <<< "$said" || fail "the shrink's refusal: $said"
all_exit_0 scaled ps:0 ps:1 worker:0 worker:1

line=$(grep '"event":"summary"' "$dir/scaled.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 300 ] || fail "clocks: $line"
[ "$(count "$dir/scaled.jsonl" '"event":"resize"')" = 1 ] || fail "not 1 resize event"
[ "$(summary_field "$line" failovers)" = 1 ] || fail "failovers: $line"
! grep '"event":"recovery"' "$dir/scaled.jsonl" | grep -v '"lost_clocks":0,' \
  || fail "the run went back to a checkpoint"
cmp "$dir/plain-export/1/model.capnp" "$dir/scaled-export/1/model.capnp" \
  || fail "the scaled run's model differs from the run never scaled"
echo "multi-process scale with standbys: 2 -> 3 shards, each protected, a fail-over of the new one"
