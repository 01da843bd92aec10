#!/usr/bin/env bash
# What a person reads after a multi-process run, one process per task on 127.0.0.1:
#  1. scripts/launch_local.sh --no-evaluator: the summary says "no evaluation" (not an accuracy
#     of 0), the metrics' final figures are null, and the script prints no complaint of bash's
#     own (`wait_for: No record of process`);
#  2. a worker that cannot load its data logs the real error (with a timestamp and ERROR) in its
#     own log, and the chief's message points there; the chief exits 1 (a restart would fail
#     again) and so does every task, saying why;
#  3. launch_local.sh's watchdog never runs the script's traps (which made bash print
#     `wait_for: No record of process` when the tasks ended before the chief).
# usage: tests/multiprocess_reports_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-reports.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

echo "== 1. a run without an evaluator"
ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 1 --workers 2 --no-evaluator \
  --connect-timeout 20 -- --dataset synthetic --model 784-32-10 --steps 60 --no-progress \
  --metrics "$dir/m1.jsonl" > "$dir/launch.log" 2>&1 || fail "launch_local.sh exited non-zero"
grep -q "^chief:0 |   no evaluation" "$dir/launch.log" || fail "the summary does not say 'no evaluation'"
grep -q "final test accuracy" "$dir/launch.log" && fail "the summary prints an accuracy nobody measured"
line=$(grep '"event":"summary"' "$dir/m1.jsonl") || fail "no summary event"
[ "$(summary_field "$line" evaluations)" = 0 ] || fail "evaluations: $line"
[ "$(summary_field "$line" final_test_accuracy)" = None ] || fail "final_test_accuracy: $line"
grep -qE "No record of process|Killed" "$dir/launch.log" && fail "launch_local.sh let bash complain: $(grep -E "No record|Killed" "$dir/launch.log")"
grep -qE "^chief:0 \| [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z INFO chief: " "$dir/launch.log" \
  || fail "the chief's log lines carry no timestamp and level"

echo "== 2. a worker that cannot load its data"
# Ports whose next one is free too (the ps task's data link listens there): tests run side by side.
"$python" - "$dir/c2.json" $("$python" "$free_port_pairs" 3) <<'PY'
import json, sys
a = [f"127.0.0.1:{p}" for p in sys.argv[2:]]
json.dump({"cluster": {"chief": a[:1], "ps": a[1:2], "worker": a[2:3]}}, open(sys.argv[1], "w"))
PY
declare -A task_pid
for t in ps:0 worker:0; do
  "$bin" "${t%%:*}" --cluster "$dir/c2.json" --task "$t" --insecure --connect-timeout 10 > "$dir/$t.log" 2>&1 &
  pids+=($!); task_pid[$t]=$!
done
# The chief's host has no dataset either: it keeps the default size and sends the path on.
set +e
"$bin" chief --cluster "$dir/c2.json" --task chief:0 --insecure --connect-timeout 10 \
  --data-dir /nonexistent/fashion --model 784-32-10 --steps 10 --no-progress > "$dir/chief.log" 2>&1
chief_status=$?
set -e
[ "$chief_status" = 1 ] || fail "the chief exited $chief_status, not 1, although its worker could not start"
grep -q "worker:0 could not start" "$dir/chief.log" || fail "the chief does not say which task failed"
grep -q "see its log" "$dir/chief.log" || fail "the chief does not point to the worker's log"
grep -qE "ERROR worker:0: cannot start the worker: .*/nonexistent/fashion" "$dir/worker:0.log" \
  || fail "the worker's own log does not hold the error"
# The tasks of a failed run exit as its chief does, saying why: never 0, which an orchestrator
# takes for a completed run and does not restart.
for t in ps:0 worker:0; do
  await_exit "${task_pid[$t]}" 20; [ "$status" = "$chief_status" ] \
    || fail "$t exited $status after the run failed, not $chief_status as the chief"
  grep -q "$t: stopped: .*worker:0 could not start.*; exiting $chief_status" "$dir/$t.log" \
    || fail "$t does not say that the run failed"
done
echo "== 3. launch_local.sh when every task ends before the chief: no complaint of bash's own"
cat > "$dir/quick_tasks" <<'SH'
#!/bin/sh
# a stand-in for actorps: the tasks end at once, the chief a little later
[ "$1" = chief ] && sleep 0.5
echo "$1 done"
SH
chmod +x "$dir/quick_tasks"
for i in 1 2 3; do
  "$root/scripts/launch_local.sh" --insecure --binary "$dir/quick_tasks" --ps 2 --workers 2 -- \
    > "$dir/quick.log" 2>&1 || fail "launch_local.sh with quick tasks exited non-zero"
  grep -qE "No record of process|Killed" "$dir/quick.log" && fail "bash complained: $(cat "$dir/quick.log")"
done
echo "PASS"
