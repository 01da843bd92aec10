#!/usr/bin/env bash
# The chief task SIGKILLed while `actorps scale --ps 3` moves the shards of a multi-process job
# (one process per task on 127.0.0.1, mutual TLS, sync, checkpoints written by the chief every
# 20 clocks): every other task exits 138 (retryable), `actorps scale` says at once that the
# chief is gone (exit 1; not at the end of its 60 s wait), and the same commands started again,
# the chief's with --resume, go on from the newest complete checkpoint at the size of the
# command's cluster spec: the run ends with every clock and exports the model of the same run
# never scaled nor killed, byte for byte; every task's new process exits 0.
# usage: tests/multiprocess_scale_kill_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-scale-kill.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 0  # c.json; grown.json adds ps:2; certificates; $net
train=(--dataset synthetic --model 784-64-10 --mode sync --batch 32 --steps 300 --eval-every 0
       --seed 5 --no-progress --checkpoint-every 20 --checkpoint-writer chief --keep 100)

echo "== the run never scaled nor killed"
start_job plain --checkpoint-dir "$dir/plain.ckpt"
all_exit_0 plain ps:0 ps:1 worker:0 worker:1

echo "== the chief killed while the shards move from 2 to 3"
start_job killed --checkpoint-dir "$dir/ckpt" --slow worker:0=40
start_spare_ps killed
await_event "$dir/killed.jsonl" '"event":"checkpoint","clock":20,'
"$bin" scale --chief "$chief_addr" --ps 3 --timeout 60 $(tls admin:0) > "$dir/scale.out" 2>&1 &
scaling=$!; pids+=($scaling)
await_event "$dir/killed-chief.log" "resizing at clock"
kill -9 "$pid_killed_chief"
for t in ps:0 ps:1 ps:2 worker:0 worker:1; do
  pid=$(eval echo "\$pid_killed_${t/:/_}")
  await_exit "$pid" 60
  [ "$status" = 138 ] || fail "$t exited $status once the chief was killed, not 138 (retryable)"
done
await_exit "$scaling" 30  # its wait is 60 s: it learns of the loss, not of a timeout
[ "$status" = 1 ] && grep -q "the chief is gone" "$dir/scale.out" \
  || fail "actorps scale exited $status once the chief was killed: $(cat "$dir/scale.out")"

echo "== the same commands again, the chief's with --resume"
start_job resumed --checkpoint-dir "$dir/ckpt" --resume "$dir/ckpt"
start_spare_ps resumed
all_exit_0 resumed ps:0 ps:1 ps:2 worker:0 worker:1
grep -q "resuming from .*ckpt-" "$dir/resumed-chief.log" || fail "the chief did not resume"
line=$(grep '"event":"summary"' "$dir/resumed.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 300 ] || fail "clocks: $line"
cmp "$dir/plain-export/1/model.capnp" "$dir/resumed-export/1/model.capnp" \
  || fail "the resumed run's model differs from the run never scaled nor killed"
echo "chief killed during actorps scale: every task exits 138, resumed, the same model"
