#!/usr/bin/env bash
# Failures of whole processes in a multi-process run on 127.0.0.1 (one process per task), all
# in one training run with checkpoints:
#  1. SIGKILL a worker process and start it again: it rejoins and the chief admits it;
#  2. SIGKILL a shard process and start it again: every shard goes back to the newest checkpoint;
#  3. SIGSTOP a worker process: the heartbeat timeout (200 ms heartbeats, 1 s timeout) reports it
#     lost within 2 s, and training finishes without it.
# The run then completes, the summary counts 3 failures and 2 recoveries, and every task exits.
#  4. SIGKILL the chief of another run: every task exits 138 (retryable); the whole run started again with
#     --resume continues from the newest checkpoint and completes.
# usage: tests/multiprocess_faults_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mpf.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout 20)
declare -A task_pid
start() {  # start TASK: one task process in the background (again, after a kill)
  local own=()  # a ps task writes its checkpoint files only under its own --checkpoint-dir
  [[ $1 == ps:* ]] && own=(--checkpoint-dir "$dir")
  "$bin" "${1%%:*}" --cluster "$dir/c.json" --task "$1" "${net[@]}" "${own[@]}" >> "$dir/$1.log" 2>&1 &
  task_pid[$1]=$!; pids+=($!)
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cluster "$dir/c.json"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
  --model 784-64-10 --steps 2500 --slow worker:0=3 --slow worker:1=3 --no-progress \
  --checkpoint-dir "$dir/ckpt" --checkpoint-every 200 --metrics "$dir/m.jsonl" > "$dir/chief.log" 2>&1 &
chief=$!; pids+=($chief)
await_event "$dir/m.jsonl" '"event":"checkpoint","clock":200'

echo "== 1. SIGKILL worker:1, start it again"
kill -9 "${task_pid[worker:1]}"
await_event "$dir/m.jsonl" '"event":"failure","role":"worker","index":1' 20
start worker:1
await_event "$dir/m.jsonl" '"event":"recovery","role":"worker","index":1' 30
grep -q "worker:1 is back" "$dir/chief.log" || fail "the chief did not see worker:1 rejoin"

echo "== 2. SIGKILL ps:1, start it again"
# At the first checkpoint written after the ones so far, whatever its clock: a chief lagging the
# shards on a loaded machine skips scheduled clocks (as in case 4), 600 once in a loaded suite.
last=$(grep -c '"event":"checkpoint"' "$dir/m.jsonl")
seen=$(grep -m $((last + 1)) -E '"event":"checkpoint"' \
         < <(timeout 30 tail -n +1 -F "$dir/m.jsonl" 2>/dev/null) | wc -l || true)
[ "$seen" -gt "$last" ] || fail "no checkpoint after the first $last in 30 s"
kill -9 "${task_pid[ps:1]}"
await_event "$dir/m.jsonl" '"event":"failure","role":"ps","index":1' 20
start ps:1
await_event "$dir/m.jsonl" '"event":"recovery","role":"ps","index":1' 30
line=$(grep '"event":"recovery","role":"ps"' "$dir/m.jsonl")
clock=$(summary_field "$line" clock)
[ $((clock % 200)) = 0 ] && [ "$clock" -gt 0 ] || fail "ps:1 was not restored from a checkpoint: $line"
grep -q "restored to the checkpoint at clock $clock" "$dir/ps:0.log" || fail "ps:0 was not restored to $clock"
grep -q "restored to the checkpoint at clock $clock" "$dir/ps:1.log" || fail "ps:1 was not restored to $clock"

echo "== 3. SIGSTOP worker:0"
await_training "$dir/m.jsonl"
stopped=$(now_ms)
kill -STOP "${task_pid[worker:0]}"
await_event "$dir/m.jsonl" '"event":"failure","role":"worker","index":0' 10
detected=$(( $(now_ms) - stopped ))
echo "a frozen worker was reported lost ${detected} ms after SIGSTOP"
[ "$detected" -le 2000 ] || fail "detecting the frozen worker took ${detected} ms (> 2 s)"

set +e; timeout 120 tail --pid="$chief" -f /dev/null; wait "$chief"; status=$?; set -e
[ "$status" = 0 ] || fail "the chief exited $status"
line=$(grep '"event":"summary"' "$dir/m.jsonl") || fail "no summary"
[ "$(summary_field "$line" clocks)" = 2500 ] || fail "clocks: $line"
[ "$(summary_field "$line" failures)" = 3 ] || fail "failures: $line"
[ "$(summary_field "$line" recoveries)" = 2 ] || fail "recoveries: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy: $line"
grep '"event":"recovery"' "$dir/m.jsonl"
kill -9 "${task_pid[worker:0]}"  # still frozen: nobody can stop it but us
wait "${task_pid[worker:0]}" 2>/dev/null || true  # reaped: its sockets are closed
for t in ps:0 ps:1 worker:1 evaluator:0; do
  set +e; timeout 15 tail --pid="${task_pid[$t]}" -f /dev/null; waited=$?; wait "${task_pid[$t]}"; s=$?; set -e
  [ "$waited" = 0 ] || fail "$t still running after the run"
  [ "$s" = 0 ] || fail "$t exited $s after the run"
done
no_listeners "$dir/c.json"

echo "== 4. SIGKILL the chief, start the run again with --resume"
cluster "$dir/c.json"
: > "$dir/m4.jsonl"
run4=(--dataset synthetic --model 784-64-10 --steps 1200 --slow worker:0=2 --slow worker:1=2
      --no-progress --checkpoint-dir "$dir/ckpt4" --checkpoint-every 200)
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" "${run4[@]}" --metrics "$dir/m4.jsonl" \
  > "$dir/chief4.log" 2>&1 &
chief=$!; pids+=($chief)
# The first checkpoint from clock 400 on, short of the run's end: a chief that lags the shards
# (a loaded machine) skips a scheduled clock whose snapshot made room for newer ones
# (maybe_checkpoint), and 400 was then missing, failing this test in a loaded suite.
await_event "$dir/m4.jsonl" '"event":"checkpoint","clock":(400|600|800|1000),' 60
kill -9 "$chief"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
  set +e; timeout 10 tail --pid="${task_pid[$t]}" -f /dev/null; wait "${task_pid[$t]}"; s=$?; set -e
  [ "$s" = 138 ] || fail "$t exited $s after losing the chief, not 138 (retryable)"
done
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" "${run4[@]}" --resume \
  --metrics "$dir/m5.jsonl" > "$dir/chief5.log" 2>&1 || fail "the resumed run failed"
line=$(grep '"event":"summary"' "$dir/m5.jsonl") || fail "no summary after resuming"
resumed=$(summary_field "$line" resumed_from)
[ "$resumed" -ge 400 ] || fail "resumed from clock $resumed, expected the checkpoint at 400 or later"
grep -q "resuming from .*ckpt-0*$resumed" "$dir/chief5.log" || fail "the resumed chief did not say where from"
[ "$(summary_field "$line" clocks)" = 1200 ] || fail "clocks: $line"
echo "resumed from clock $resumed after the chief was killed"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
  set +e; timeout 15 tail --pid="${task_pid[$t]}" -f /dev/null; wait "${task_pid[$t]}"; s=$?; set -e
  [ "$s" = 0 ] || fail "$t exited $s after the resumed run"
done
no_listeners "$dir/c.json"
echo PASS
