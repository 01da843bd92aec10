#!/usr/bin/env bash
# Failures during recovery, with processes restarted as an orchestrator restarts them (the same
# command again), on 127.0.0.1, one process per task, one run with checkpoints:
#  1. SIGKILL ps:1; while the chief waits for it to come back, SIGKILL ps:0 too: the rollback
#     starts over and waits for both; both started again, the run goes back to a checkpoint.
#  2. SIGKILL ps:1, start it again, and SIGKILL it again the moment the chief has it back (the
#     rollback is restoring): the rollback starts over; started once more, the run goes on.
#  3. Freeze the chief (SIGSTOP: too busy to notice), SIGKILL ps:0 and start it again, thaw the
#     chief: the new process's join is accepted (its previous process is treated as lost then,
#     if the chief had not seen it go) and the run goes back to a checkpoint.
# The run completes; every task's last process exits 0. Then, each in a run of its own:
#  5. SIGKILL ps:0 after training ended (the final evaluation held by a frozen evaluator): the
#     run goes back to its final checkpoint and finishes again; everything exits 0.
#  6. SIGKILL both workers: the run waits for their processes instead of finishing without
#     them; started again, they train the rest and the run ends at its last clock.
#  7. SIGKILL ps:1, then both workers while the chief waits for ps:1: the rollback resumes
#     without them; their new processes, started after it, take over and train to the end.
#  8. SIGKILL ps:1 and never start it again: after the chief's --connect-timeout the run fails
#     as retryable (a restart with --resume may find it): the chief and every task exit 138.
#  4. SIGKILL the chief: every task exits 138 (retryable).
# usage: tests/multiprocess_restarts_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mpr.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 10000 --connect-timeout 20)
declare -A task_pid
start() {  # start TASK: one task process in the background (again, after a kill)
  local own=()  # a ps task writes its checkpoint files only under its own --checkpoint-dir
  [[ $1 == ps:* ]] && own=(--checkpoint-dir "$dir")
  "$bin" "${1%%:*}" --cluster "$dir/c.json" --task "$1" "${net[@]}" "${own[@]}" >> "$dir/$1.log" 2>&1 &
  task_pid[$1]=$!; pids+=($!)
}
run_chief() {  # run_chief N FLAGS...: a fresh cluster, its tasks, and run N's chief (1000 clocks,
  # no evaluations during training) with FLAGS; metrics m<N>.jsonl, log chief<N>.log
  local n=$1; shift
  cluster "$dir/c.json"
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
  "$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
    --model 784-64-10 --steps 1000 --eval-every 0 --slow worker:0=3 --slow worker:1=3 --no-progress \
    --metrics "$dir/m$n.jsonl" "$@" > "$dir/chief$n.log" 2>&1 &
  chief=$!; pids+=($chief)
}
every_task_exits_0() {
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    await_exit "${task_pid[$t]}" 20; [ "$status" = 0 ] || fail "$t exited $status after the run"
  done
}
cluster "$dir/c.json"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
  --model 784-64-10 --steps 2000 --slow worker:0=3 --slow worker:1=3 --no-progress \
  --checkpoint-dir "$dir/ckpt" --checkpoint-every 100 --metrics "$dir/m.jsonl" > "$dir/chief.log" 2>&1 &
chief=$!; pids+=($chief)
# the first checkpoint written (on a loaded machine the chief may hear of clock 100 only once
# the shards are past the clocks they keep, and that one is skipped)
await_event "$dir/m.jsonl" '"event":"checkpoint","clock":[0-9]+,'

echo "== 1. SIGKILL ps:1, and ps:0 while the chief waits for ps:1"
kill -9 "${task_pid[ps:1]}"
await_event "$dir/chief.log" "waiting for ps:1 to come back" 20
kill -9 "${task_pid[ps:0]}"
await_event "$dir/chief.log" "ps:0 lost .*the rollback starts over" 20
await_event "$dir/chief.log" "waiting for ps:0, ps:1 to come back" 20
start ps:1; start ps:0
await_event "$dir/m.jsonl" '"event":"recovery","role":"ps"' 60
grep -q "lost while the run was going back" "$dir/chief.log" && fail "the second loss ended the run"

echo "== 2. SIGKILL ps:1, start it, SIGKILL it again as soon as the chief has it back"
await_event "$dir/m.jsonl" '"event":"train"' 30
backs=$(grep -c "ps:1 is back" "$dir/chief.log" || true)
kill -9 "${task_pid[ps:1]}"
await_event "$dir/chief.log" "waiting for ps:1 to come back" 20
start ps:1
grep -q -m$((backs + 1)) "ps:1 is back" < <(timeout 30 tail -n +1 -F "$dir/chief.log") || fail "ps:1 not back"
kill -9 "${task_pid[ps:1]}"
start ps:1
# two rollbacks so far, each ending in one recovery event
grep -q -m2 '"event":"recovery","role":"ps"' < <(timeout 60 tail -n +1 -F "$dir/m.jsonl") \
  || fail "no recovery after ps:1 was lost during its rollback"

echo "== 3. freeze the chief, SIGKILL ps:0 and start it again, thaw the chief"
await_event "$dir/m.jsonl" '"event":"train"' 30
kill -STOP "$chief"
kill -9 "${task_pid[ps:0]}"
wait "${task_pid[ps:0]}" 2>/dev/null || true
start ps:0
sleep 1  # the scenario: the chief stays frozen while the new process dials it (not a wait)
kill -CONT "$chief"
grep -q -m2 "joined the chief" < <(timeout 30 tail -n +1 -F "$dir/ps:0.log") || fail "ps:0 did not join again"
grep -q "refused" "$dir/ps:0.log" && fail "the chief refused the restarted ps:0"
grep -q -m3 '"event":"recovery","role":"ps"' < <(timeout 60 tail -n +1 -F "$dir/m.jsonl") \
  || fail "no recovery after ps:0 was restarted"
if grep -q "ps:0 joined again from a new process" "$dir/chief.log"; then
  echo "the restarted ps:0 joined before the chief saw its previous process go: it replaced it"
else
  echo "the chief saw ps:0's previous process go before the new one joined"
fi

await_exit "$chief" 180; [ "$status" = 0 ] || fail "the chief exited $status"
line=$(grep '"event":"summary"' "$dir/m.jsonl") || fail "no summary"
[ "$(summary_field "$line" clocks)" = 2000 ] || fail "clocks: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy: $line"
every_task_exits_0
no_listeners "$dir/c.json"

echo "== 5. SIGKILL ps:0 after training ended (the final evaluation held by a frozen evaluator)"
run_chief 5 --checkpoint-dir "$dir/ckpt5" --checkpoint-every 500
# Frozen as soon as training runs (the chief starts it once the evaluator has joined; it
# evaluates only at the end, --eval-every 0), so that it holds the final evaluation however far
# training got meanwhile: frozen at the clock-500 checkpoint instead, a loaded host had finished
# the run before the freeze (the frozen stretch stays well under the 10 s peer timeout: about
# 4 s of training and a restart).
await_training "$dir/m5.jsonl"
kill -STOP "${task_pid[evaluator:0]}"
await_event "$dir/m5.jsonl" '"event":"checkpoint","clock":1000'
kill -9 "${task_pid[ps:0]}"
await_event "$dir/chief5.log" "waiting for ps:0 to come back" 20
start ps:0
kill -CONT "${task_pid[evaluator:0]}"
await_exit "$chief" 60; [ "$status" = 0 ] || fail "the chief exited $status after a ps was lost at the end"
line=$(grep '"event":"summary"' "$dir/m5.jsonl") || fail "no summary"
[ "$(summary_field "$line" recoveries)" = 1 ] || fail "recoveries: $line"
every_task_exits_0

echo "== 6. SIGKILL both workers: training waits for their processes, which come back"
run_chief 6
await_training "$dir/m6.jsonl"
kill -9 "${task_pid[worker:0]}" "${task_pid[worker:1]}"
await_event "$dir/chief6.log" "worker:1 (lost|left)" 20
await_event "$dir/chief6.log" "worker:0 lost" 20
grep -q "summary:" "$dir/chief6.log" && fail "the run ended with both workers lost"
start worker:0; start worker:1
await_exit "$chief" 60; [ "$status" = 0 ] || fail "the chief exited $status after both workers came back"
line=$(grep '"event":"summary"' "$dir/m6.jsonl") || fail "no summary"
[ "$(summary_field "$line" clocks)" = 1000 ] || fail "clocks: $line"
every_task_exits_0

echo "== 7. SIGKILL ps:1, then both workers while the chief waits for ps:1; ps:1 started again,"
echo "      then the workers: the rollback resumes without them and their new processes take over"
run_chief 7 --checkpoint-dir "$dir/ckpt7" --checkpoint-every 100
await_event "$dir/m7.jsonl" '"event":"checkpoint","clock":[0-9]+,'
kill -9 "${task_pid[ps:1]}"
await_event "$dir/chief7.log" "waiting for ps:1 to come back" 20
kill -9 "${task_pid[worker:0]}" "${task_pid[worker:1]}"
await_event "$dir/chief7.log" "worker:0's process lost .* while the run goes back" 20
await_event "$dir/chief7.log" "worker:1's process lost .* while the run goes back" 20
start ps:1
await_event "$dir/m7.jsonl" '"event":"recovery","role":"ps"' 30
start worker:0; start worker:1
await_exit "$chief" 60; [ "$status" = 0 ] || fail "the chief exited $status after the workers came back"
line=$(grep '"event":"summary"' "$dir/m7.jsonl") || fail "no summary"
[ "$(summary_field "$line" clocks)" = 1000 ] || fail "clocks: $line"
[ "$(grep -c '"event":"recovery","role":"worker"' "$dir/m7.jsonl")" = 2 ] \
  || fail "both workers' new processes should have taken over: $(grep recovery "$dir/m7.jsonl")"
every_task_exits_0

echo "== 8. SIGKILL ps:1 and leave it dead: the chief gives up after its --connect-timeout; 138 everywhere"
cluster "$dir/c.json"
declare -A seen=()  # each task log's lines before this run (the logs are appended to)
for t in ps:0 worker:0 worker:1 evaluator:0; do seen[$t]=$(wc -l < "$dir/$t.log"); done
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 --insecure --heartbeat-ms 200 --peer-timeout-ms 10000 \
  --connect-timeout 3 --dataset synthetic --model 784-64-10 --steps 100000 --no-progress \
  --checkpoint-dir "$dir/ckpt8" --checkpoint-every 100 --metrics "$dir/m8.jsonl" \
  > "$dir/chief8.log" 2>&1 &
chief=$!; pids+=($chief)
await_event "$dir/m8.jsonl" '"event":"checkpoint","clock":[0-9]+,'
kill -9 "${task_pid[ps:1]}"
await_exit "$chief" 30
[ "$status" = 138 ] || fail "the chief exited $status when ps:1 never came back, not 138 (retryable)"
grep -q "ps:1 did not come back" "$dir/chief8.log" || fail "the chief does not say ps:1 did not come back"
# Each task stops by the chief's order and says why: the order comes before the chief leaves
# (a task's role is stopped, and seen stopped in its own process, before the chief has its down
# message). A task that took the order, peer_unreachable, for the chief lost said "a restart
# joins the chief's next run" instead.
for t in ps:0 worker:0 worker:1 evaluator:0; do
  await_exit "${task_pid[$t]}" 20
  [ "$status" = 138 ] || fail "$t exited $status when ps:1 never came back, not 138 as the chief"
  tail -n +$((seen[$t] + 1)) "$dir/$t.log" | grep -q "stopped: .*ps:1 did not come back.*; exiting 138" \
    || fail "$t does not say it stopped because ps:1 did not come back: $(tail -n 2 "$dir/$t.log")"
done

echo "== 4. SIGKILL the chief: every task exits 138"
cluster "$dir/c.json"
: > "$dir/m4.jsonl"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
  --model 784-64-10 --steps 2000 --slow worker:0=3 --no-progress --metrics "$dir/m4.jsonl" \
  > "$dir/chief4.log" 2>&1 &
chief=$!; pids+=($chief)
await_training "$dir/m4.jsonl"
kill -9 "$chief"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
  await_exit "${task_pid[$t]}" 20; [ "$status" = 138 ] || fail "$t exited $status after losing the chief, not 138"
done
echo PASS
