#!/usr/bin/env bash
# What a multi-process run that did not reach its end reports (127.0.0.1, one process per task),
# checked against the workers' own train events:
#  1. SIGTERM to the chief (no checkpoints): it exits 143; the summary gives the clock it stopped
#     at, the clocks and samples the workers trained beside the planned ones, and labels the last
#     evaluation's accuracy with its clock (not the final parameters').
#  2. SIGKILL both workers, never started again: --connect-timeout after, not later, the chief
#     exits 138 (retryable) with the clocks and samples trained; every other task exits 138.
#  3. The same with checkpoints: no final checkpoint waits for a clock no worker reaches (which
#     held the chief for the request timeout, 60 s here).
#  4. SIGKILL the evaluator, never started again: the run completes (exit 0) and its final
#     accuracy, the last evaluation's, is labelled with that evaluation's clock.
# usage: tests/multiprocess_figures_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mpfig.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

connect=6
net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout $connect)
declare -A task_pid
start() {  # start TASK: one task process in the background
  local own=()  # a ps task writes its checkpoint files only under its own --checkpoint-dir
  [[ $1 == ps:* ]] && own=(--checkpoint-dir "$dir")
  "$bin" "${1%%:*}" --cluster "$dir/c.json" --task "$1" "${net[@]}" "${own[@]}" >> "$dir/$1.log" 2>&1 &
  task_pid[$1]=$!; pids+=($!)
}
run_chief() {  # run_chief N FLAGS...: a fresh cluster, its tasks, and run N's chief (100 000
  # clocks: none of these runs reaches its end) with FLAGS; metrics m<N>.jsonl, log chief<N>.log
  local n=$1; shift
  cluster "$dir/c.json"
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
  "$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
    --model 784-64-10 --steps 100000 --slow worker:0=2 --slow worker:1=2 --no-progress \
    --request-timeout 60 --metrics "$dir/m$n.jsonl" "$@" > "$dir/chief$n.log" 2>&1 &
  chief=$!; pids+=($chief)
}
tasks_exit() {  # tasks_exit CODE TASK...: each exits CODE within 20 s
  local t
  for t in "${@:2}"; do
    await_exit "${task_pid[$t]}" 20; [ "$status" = "$1" ] || fail "$t exited $status, not $1"
  done
}
# check_trained METRICS EXACT: the summary's worker_clocks are one past each worker's last train
# event (EXACT=1; else at least: a checkpoint counts the clocks its shards kept, some of whose
# reports a killed worker never sent), its clocks the most of them, short of the 100 000
# planned, and its samples 64 rows a clock of each worker (EXACT=1: the train events' rows).
check_trained() {
  "$python" - "$1" "$2" <<'PY' || fail "the summary's figures disagree with the train events"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
exact = sys.argv[2] == "1"
s = [e for e in events if e["event"] == "summary"][-1]
last, samples = {0: 0, 1: 0}, 0
for e in events:
    if e["event"] == "train":
        last[e["worker"]] = max(last[e["worker"]], e["clock"] + 1)
        samples += e["samples"]
wc = s["worker_clocks"]
print("summary: clocks", s["clocks"], "of", s["planned_clocks"], "per worker", wc,
      "samples", s["samples"], "of", s["planned_samples"], "; train events:", last, samples)
ok = len(wc) == 2 and all((wc[w] == last[w]) if exact else (wc[w] >= last[w]) for w in (0, 1))
ok = ok and s["clocks"] == max(wc) and 0 < s["clocks"] < s["planned_clocks"] == 100000
ok = ok and s["planned_samples"] == 100000 * 2 * 64 and s["samples"] == 64 * sum(wc)
ok = ok and (not exact or s["samples"] == samples)
sys.exit(0 if ok else 1)
PY
}

echo "== 1. SIGTERM to the chief: the stopped clock, the clocks and samples trained"
run_chief 1 --eval-every 100
await_event "$dir/m1.jsonl" '"event":"eval"' 60
kill -TERM "$chief"
await_exit "$chief" 60; [ "$status" = 143 ] || fail "the chief exited $status after SIGTERM, not 143"
tasks_exit 138 ps:0 ps:1 worker:0 worker:1 evaluator:0
line=$(grep '"event":"summary"' "$dir/m1.jsonl") || fail "no summary event after SIGTERM"
check_trained "$dir/m1.jsonl" 1
stopped=$(summary_field "$line" stopped_at)
clocks=$(summary_field "$line" clocks)
[ "$stopped" -le "$clocks" ] || fail "stopped at $stopped, past the $clocks clocks trained: $line"
grep -q "stopped early by SIGTERM at clock $stopped of 100000" "$dir/chief1.log" ||
  fail "the chief did not say where of the run it stopped"
grep -qE "^  $clocks of 100000 clocks \(per worker: [0-9]+ [0-9]+\), [0-9]+ of 12800000 samples in" \
  "$dir/chief1.log" || fail "the summary does not print the clocks trained"
evaluated=$(summary_field "$line" final_eval_clock)
[ "$evaluated" -lt "$clocks" ] && [ "$evaluated" -ge 100 ] || fail "final_eval_clock: $line"
grep -q "test (of the parameters at clock $evaluated, not the final ones) accuracy" \
  "$dir/chief1.log" || fail "the last evaluation's accuracy passes for the final parameters'"
no_listeners "$dir/c.json"

lose_every_worker() {  # lose_every_worker N: SIGKILL both workers of run N; the chief exits 138
  # within --connect-timeout (and a little), with every other task
  await_event "$dir/m$1.jsonl" '"event":"train","worker":1,"clock":(1[0-9]{2}|[2-9][0-9]{2}),' 60
  local killed=$(date +%s%N)
  kill -9 "${task_pid[worker:0]}" "${task_pid[worker:1]}"
  await_exit "$chief" 60
  local ms=$(( ($(date +%s%N) - killed) / 1000000 ))
  echo "run $1: the chief exited $status ${ms} ms after both workers were killed"
  [ "$status" = 138 ] || fail "the chief exited $status after losing every worker, not 138"
  [ "$ms" -le $(( (connect + 8) * 1000 )) ] || fail "it took $ms ms (--connect-timeout $connect s)"
  tasks_exit 138 ps:0 ps:1 evaluator:0
  grep -q "error: every worker was lost: the run trained $(summary_field \
    "$(grep '"event":"summary"' "$dir/m$1.jsonl")" clocks) of its 100000 clocks" "$dir/chief$1.log" ||
    fail "the chief did not say every worker was lost"
  line=$(grep '"event":"summary"' "$dir/m$1.jsonl") || fail "no summary"
  [ "$(summary_field "$line" workers_lost)" = True ] || fail "workers_lost: $line"
  no_listeners "$dir/c.json"
}

echo "== 2. SIGKILL both workers: exit 138 within --connect-timeout, the figures trained"
run_chief 2 --eval-every 0
lose_every_worker 2
check_trained "$dir/m2.jsonl" 1

echo "== 3. the same with checkpoints: no final checkpoint holds the chief"
run_chief 3 --eval-every 0 --checkpoint-dir "$dir/ckpt3" --checkpoint-every 50
lose_every_worker 3
check_trained "$dir/m3.jsonl" 0
newest=$(summary_field "$line" last_checkpoint)
[ "$newest" -ge 50 ] || fail "no checkpoint before the workers were lost: $line"
[ -s "$(printf "%s/ckpt3/ckpt-%012d/MANIFEST.json" "$dir" "$newest")" ] ||
  fail "the newest checkpoint the summary names ($newest) is not complete"
grep -q "the newest checkpoint is at clock $newest" "$dir/chief3.log" ||
  fail "the chief did not say where a restart goes on from"

echo "== 4. SIGKILL the evaluator: the final figures are labelled with their clock"
cluster "$dir/c.json"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
  --model 784-64-10 --steps 1500 --eval-every 100 --slow worker:0=3 --slow worker:1=3 \
  --no-progress --metrics "$dir/m4.jsonl" > "$dir/chief4.log" 2>&1 &
chief=$!; pids+=($chief)
await_event "$dir/m4.jsonl" '"event":"eval"' 60
kill -9 "${task_pid[evaluator:0]}"
await_exit "$chief" 60; [ "$status" = 0 ] || fail "the chief exited $status, not 0"
line=$(grep '"event":"summary"' "$dir/m4.jsonl") || fail "no summary"
[ "$(summary_field "$line" clocks)" = 1500 ] || fail "clocks: $line"
evaluated=$(summary_field "$line" final_eval_clock)
last=$(grep '"event":"eval"' "$dir/m4.jsonl" | tail -1)
[ "$evaluated" = "$(summary_field "$last" clock)" ] && [ "$evaluated" -lt 1500 ] ||
  fail "final_eval_clock $evaluated is not the last evaluation's: $line"
[ "$(summary_field "$line" final_test_accuracy)" = "$(summary_field "$last" test_accuracy)" ] ||
  fail "the final accuracy is not the last evaluation's: $line"
grep -q "test (of the parameters at clock $evaluated, not the final ones) accuracy" \
  "$dir/chief4.log" || fail "the last evaluation's accuracy passes for the final parameters'"
grep -q "the final parameters were not evaluated (no evaluator)" "$dir/chief4.log" ||
  fail "the chief did not say the final parameters were not evaluated"
tasks_exit 0 ps:0 ps:1 worker:0 worker:1
no_listeners "$dir/c.json"
echo PASS
