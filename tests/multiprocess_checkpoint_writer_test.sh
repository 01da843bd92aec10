#!/usr/bin/env bash
# Checkpoints of a multi-process run (one process per task on 127.0.0.1) without a shared
# filesystem: every task runs in a directory of its own and --checkpoint-dir is relative, so
# each process sees a different "ckpt" (as separate hosts would).
#  1. --checkpoint-writer chief: the shards send their files to the chief, which writes whole
#     checkpoints into its own directory; no ps task's directory gets any.
#  2. The same command with a larger --steps and --resume auto continues from the chief's newest
#     checkpoint (every shard restored from it) and completes.
#  3. --checkpoint-writer shards: each shard writes into its own directory, where the chief's
#     checkpoint directory does not exist: every checkpoint fails, the run says why (naming
#     --checkpoint-writer chief) and the chief exits 1.
# usage: tests/multiprocess_checkpoint_writer_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")  # the tasks run in directories of their own
dir=$(mktemp -d /tmp/actorps-mpc.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout 20)
tasks=(ps:0 ps:1 worker:0 worker:1 evaluator:0)
declare -A task_pid
start() {  # start TASK: one task process in the background, in a directory of its own
  mkdir -p "$dir/${1/:/}"
  (cd "$dir/${1/:/}" && exec "$bin" "${1%%:*}" --cluster "$dir/c.json" --task "$1" "${net[@]}") \
    >> "$dir/$1.log" 2>&1 &
  task_pid[$1]=$!; pids+=($!)
}
chief_run() {  # chief_run LOG ARGS...: the chief in its own directory, in the foreground
  local log=$1; shift
  mkdir -p "$dir/chief"
  set +e
  (cd "$dir/chief" && "$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" \
     --dataset synthetic --model 784-32-10 --mode sync --eval-every 0 --no-progress \
     --checkpoint-dir ckpt --checkpoint-every 100 "$@") > "$dir/$log" 2>&1
  status=$?
  set -e
}
tasks_exit() {  # tasks_exit CODE: every task ends with CODE
  for t in "${tasks[@]}"; do
    set +e; timeout 15 tail --pid="${task_pid[$t]}" -f /dev/null; wait "${task_pid[$t]}"; s=$?; set -e
    [ "$s" = "$1" ] || fail "$t exited $s, expected $1"
  done
}

echo "== 1. --checkpoint-writer chief, nothing shared"
cluster "$dir/c.json"
for t in "${tasks[@]}"; do start "$t"; done
chief_run chief1.log --steps 300 --checkpoint-writer chief --resume auto --metrics "$dir/m1.jsonl"
[ "$status" = 0 ] || fail "the chief exited $status"
tasks_exit 0
grep -q "starting fresh" "$dir/chief1.log" || fail "--resume auto did not say it started fresh"
for c in 100 200 300; do
  ck="$dir/chief/ckpt/ckpt-$(printf %012d $c)"
  for f in MANIFEST.json run.capnp shard-0.capnp shard-1.capnp; do
    [ -s "$ck/$f" ] || fail "$ck/$f missing"
  done
done
for t in ps0 ps1 worker0 worker1; do
  [ ! -e "$dir/$t/ckpt" ] || fail "$t got a checkpoint directory: the chief should write them all"
done
line=$(grep '"event":"summary"' "$dir/m1.jsonl") || fail "no summary"
[ "$(summary_field "$line" checkpoints)" = 3 ] || fail "checkpoints: $line"

echo "== 2. the same command, longer, --resume auto"
cluster "$dir/c.json"
for t in "${tasks[@]}"; do start "$t"; done
chief_run chief2.log --steps 500 --checkpoint-writer chief --resume auto --metrics "$dir/m2.jsonl"
[ "$status" = 0 ] || fail "the resumed chief exited $status"
tasks_exit 0
grep -q "resuming from ckpt/ckpt-000000000300 (clock 300)" "$dir/chief2.log" || fail "did not resume from 300"
grep -q "restored to the checkpoint at clock 300" "$dir/ps:1.log" || fail "ps:1 was not restored"
line=$(grep '"event":"summary"' "$dir/m2.jsonl") || fail "no summary after resuming"
[ "$(summary_field "$line" resumed_from)" = 300 ] || fail "resumed_from: $line"
[ "$(summary_field "$line" clocks)" = 500 ] || fail "clocks: $line"
[ -s "$dir/chief/ckpt/ckpt-000000000500/MANIFEST.json" ] || fail "no final checkpoint at 500"

echo "== 3. --checkpoint-writer shards without a shared filesystem fails loudly"
cluster "$dir/c.json"
for t in "${tasks[@]}"; do start "$t"; done
chief_run chief3.log --steps 200 --checkpoint-writer shards --overwrite-checkpoints \
  --metrics "$dir/m3.jsonl"
[ "$status" = 1 ] || fail "the chief exited $status, expected 1 (every checkpoint failed)"
tasks_exit 0
grep -q "use --checkpoint-writer chief" "$dir/chief3.log" || fail "the failure did not name the remedy"
grep -q "every checkpoint of this run failed (2)" "$dir/chief3.log" || fail "the failures were not counted"
no_listeners "$dir/c.json"
echo PASS
