#!/usr/bin/env bash
# A restarted worker process trains what its previous process had not, on 127.0.0.1, one process
# per task (chief, 2 ps, 2 workers, evaluator), one epoch of a synthetic set:
#  1. SIGTERM worker:1 mid-run (it leaves at once, as a deleted pod does) and start it again 2 s
#     later with the same command: the workers' own train events add up to the epoch, each
#     worker's to its part with the minibatches its lost process pushed but never reported
#     (the recovery's unreported_batches), and the summary says the same; the recovery event
#     names the minibatch the new process went on from: the one after the last every shard
#     holds of its predecessor, as the ps processes' logs say, and the last it reported (a
#     leaving worker sends the reports it holds back first).
#  2. SIGTERM worker:1 the moment it has joined, before the run began (worker:0 not started
#     yet): the chief waits for its next process instead of failing; started again, it trains.
#  3. SIGTERM worker:1 mid-run, start it again and SIGKILL that process the moment the chief has
#     it back (it is being re-admitted, or its role starting): a third process takes over and
#     the epoch is still trained once.
# usage: tests/multiprocess_worker_resume_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mwr.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 10000 --connect-timeout 30)
rows=32768 batch=32
steps=$((rows / 2 / batch))  # clocks of one epoch: each worker's half in minibatches
declare -A task_pid
start() {  # start TASK: one task process in the background (again, after a kill)
  "$bin" "${1%%:*}" --cluster "$dir/c.json" --task "$1" "${net[@]}" >> "$dir/$1.log" 2>&1 &
  task_pid[$1]=$!; pids+=($!)
}
run_chief() {  # run_chief N: run N's chief (metrics m<N>.jsonl, log chief<N>.log)
  "$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
    --synthetic-rows "$rows" --epochs 1 --batch "$batch" --model 784-64-10 --eval-every 0 --mode sync \
    --slow worker:0=4 --slow worker:1=4 --no-progress --metrics "$dir/m$1.jsonl" \
    > "$dir/chief$1.log" 2>&1 &
  chief=$!; pids+=($chief)
}
check_epoch() {  # check_epoch N: the workers' train events of run N cover the epoch once
  "$python" - "$dir/m$1.jsonl" "$steps" "$batch" <<'PY' || fail "run $1 did not train the epoch once"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
steps, batch = int(sys.argv[2]), int(sys.argv[3])
per = {0: 0, 1: 0}
for e in events:
    if e["event"] == "train": per[e["worker"]] += e["samples"]
    # minibatches a lost process pushed to every shard but never reported
    if e["event"] == "recovery" and e["role"] == "worker":
        per[e["index"]] += e["unreported_batches"] * batch
summary = [e for e in events if e["event"] == "summary"][-1]
print("train samples per worker:", per, "summary:", summary["samples"])
ok = all(n == steps * batch for n in per.values()) and summary["samples"] == sum(per.values())
sys.exit(0 if ok else 1)
PY
}
every_task_exits_0() {
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    await_exit "${task_pid[$t]}" 20; [ "$status" = 0 ] || fail "$t exited $status after the run"
  done
}

echo "== 1. SIGTERM worker:1 mid-run, the same command 2 s later: every row once"
cluster "$dir/c.json"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
run_chief 1
await_event "$dir/m1.jsonl" '"event":"train","worker":1,"clock":40,'
kill -TERM "${task_pid[worker:1]}"
await_event "$dir/chief1.log" "worker:1 (lost|left)" 20
sleep 2  # what the orchestrator takes to restart it (not a wait for an event)
start worker:1
await_exit "$chief" 120; [ "$status" = 0 ] || fail "the chief exited $status"
grep -q '"event":"recovery","role":"worker","index":1' "$dir/m1.jsonl" || fail "no recovery of worker:1"
"$python" - "$dir/m1.jsonl" "$dir/ps:0.log" "$dir/ps:1.log" <<'PY' || fail "the new process did not go on where the last left off"
import json, re, sys
before, recovery = 0, None  # the first process's reports: every train event before the recovery
for e in map(json.loads, open(sys.argv[1])):
    if e["event"] == "recovery": recovery = e; break
    if e["event"] == "train" and e["worker"] == 1: before += 1
# What each shard holds of worker:1's pushes, in the ps processes' own logs: the replacement
# goes on after the fewest (the reports may lag them: a process sends them in batches).
held = [int(re.search(r"worker 1 rejoins, live at clock \d+; (\d+) clocks", open(f).read())[1])
        for f in sys.argv[2:]]
print("reported before the loss:", before, "shards hold:", held, "recovery:", recovery)
# SIGTERM: the worker sends its held-back reports before its process says it leaves, and each
# later one at once, so the chief has a train event of almost every minibatch the shards hold
# (one pushed as the process exits may miss it); those it lacks are counted, none twice.
ok = (recovery["resumed_batch"] == min(held) == before + recovery["unreported_batches"]
      and recovery["unreported_batches"] <= 1 and recovery["skipped_samples"] == 0)
sys.exit(0 if ok else 1)
PY
check_epoch 1
every_task_exits_0

echo "== 2. SIGTERM worker:1 the moment it joined, before the run began: its next process trains"
cluster "$dir/c.json"
for t in ps:0 ps:1 worker:1 evaluator:0; do start "$t"; done
run_chief 2
await_event "$dir/chief2.log" "worker:1 joined" 30
kill -TERM "${task_pid[worker:1]}"
await_event "$dir/chief2.log" "worker:1's process lost" 20
start worker:1; start worker:0
await_exit "$chief" 120; [ "$status" = 0 ] || fail "the chief exited $status after worker:1 came back"
check_epoch 2
every_task_exits_0
echo "== 3. SIGTERM worker:1 mid-run; its next process SIGKILLed the moment the chief has it back"
echo "      (being re-admitted); a third process takes over: every row once"
cluster "$dir/c.json"
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do start "$t"; done
run_chief 3
await_event "$dir/m3.jsonl" '"event":"train","worker":1,"clock":40,'
kill -TERM "${task_pid[worker:1]}"
await_event "$dir/chief3.log" "worker:1 (lost|left)" 20
start worker:1
await_event "$dir/chief3.log" "worker:1 is back" 30
kill -9 "${task_pid[worker:1]}"
start worker:1  # (joining before the chief saw the kill, it supersedes the killed process)
await_exit "$chief" 120; [ "$status" = 0 ] || fail "the chief exited $status"
check_epoch 3
every_task_exits_0
echo "PASS"
