#!/usr/bin/env bash
# --follow as one process per task on 127.0.0.1 (2 ps, 2 workers, an evaluator), on a generated
# Criteo stream (gzip: each worker reads 500 rows of a day, batches of 96), sync mode:
#   A  the chief follows the directory and grants the worker tasks their clocks: day 2 written
#      while the run holds at the end of day 1 is trained; evaluations come on schedule; the stop
#      file ends the run as at its last clock; every task exits 0;
#   B  SIGTERM to the chief ends the stream the same way (exit 0, a final checkpoint), and every
#      clock's loss equals that of `actorps simulate` reading the same two days in one go.
# Every wait is for an event the run writes (its metrics file), never a sleep.
# usage: tests/multiprocess_follow_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-mpfollow.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

"$bin" gen-data criteo --days 2 --rows 1000 --test-rows 500 --gzip --seed 4 --out "$dir/gen" \
  > /dev/null
net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 2000 --connect-timeout 30)
common=(--test "$dir/gen/test.tsv.gz" --model lr --batch 96 --mode sync --lr-schedule constant
        --no-progress)
add_day() {  # N DIR: day N written as a followed directory wants: a hidden name, renamed
  cp "$dir/gen/train/day-$1.tsv.gz" "$2/.day-$1.tmp"
  mv "$2/.day-$1.tmp" "$2/day-$1.tsv.gz"
}
train_event() { echo "\"event\":\"train\",\"worker\":$1,\"clock\":$2,"; }
start_tasks() {  # CLUSTER NAME [PS FLAGS...]: the ps, worker and evaluator tasks, in the background
  local cluster=$1 name=$2 extra
  shift 2
  task_pids=()
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    extra=()
    [ "${t%%:*}" = ps ] && extra=("$@")
    "$bin" "${t%%:*}" --cluster "$cluster" --task "$t" "${net[@]}" ${extra[@]+"${extra[@]}"} \
      >> "$dir/$name-$t.log" 2>&1 &
    pids+=($!)
    task_pids+=($!)
  done
}
tasks_exit_0() {  # NAME: every task of the cluster exits 0 once the chief has
  for p in "${task_pids[@]}"; do
    await_exit "$p" 60
    [ "$status" = 0 ] || fail "run $1: a task (pid $p) exited $status, not 0"
  done
}

# --- A: the chief grants what the files hold; day 2 is trained; the stop file ---------------
mkdir "$dir/a"
add_day 1 "$dir/a"
cluster "$dir/a.json"
start_tasks "$dir/a.json" a
"$bin" chief --cluster "$dir/a.json" --task chief:0 "${net[@]}" --dataset "criteo:$dir/a" \
  "${common[@]}" --eval-every 4 --follow --stop-file "$dir/a.stop" --metrics "$dir/a.jsonl" \
  > "$dir/a-chief.log" 2>&1 &
chief=$!
pids+=("$chief")
await_event "$dir/a.jsonl" "$(train_event 1 3)" 120
# Day 1 holds 5 batches a worker: clock 4 waits for the keys of clock 5, which are not there.
grep -q '"event":"train","worker":[01],"clock":4,' "$dir/a.jsonl" \
  && fail "run a trained clock 4 before day 2 came"
add_day 2 "$dir/a"
await_event "$dir/a.jsonl" '"event":"stream","files":\["day-2.tsv.gz"\]' 60
await_event "$dir/a.jsonl" "$(train_event 1 8)" 120
touch "$dir/a.stop"
await_exit "$chief" 120
[ "$status" = 0 ] || fail "run a: the chief exited $status, not 0"
tasks_exit_0 a
grep -q "10 clocks, 1920 samples" "$dir/a-chief.log" || fail "run a: not 10 clocks of 2 x 96 rows"
grep -q '"event":"stream_end","clock":10,"by":"the stop file '"$dir/a.stop"'"' "$dir/a.jsonl" \
  || fail "run a: no stream_end at clock 10 by the stop file"
for w in 0 1; do
  for c in 5 9; do  # day 2's clocks, each of 96 rows, trained by the worker processes
    grep -q "$(train_event $w $c)\"loss\":[-0-9.e]*,\"samples\":96," "$dir/a.jsonl" \
      || fail "run a: worker $w did not train clock $c of day 2"
  done
done
for c in 4 8 10; do  # by the evaluator process, on schedule while it streams, and the final one
  grep -q "\"event\":\"eval\",\"clock\":$c," "$dir/a.jsonl" || fail "run a: no evaluation at $c"
done

# --- B: SIGTERM to the chief ends the stream; the losses of a run in one go ------------------
mkdir "$dir/b"
add_day 1 "$dir/b"
cluster "$dir/b.json"
start_tasks "$dir/b.json" b --checkpoint-dir "$dir/b.ckpt"
"$bin" chief --cluster "$dir/b.json" --task chief:0 "${net[@]}" --dataset "criteo:$dir/b" \
  "${common[@]}" --eval-every 0 --follow --checkpoint-dir "$dir/b.ckpt" \
  --metrics "$dir/b.jsonl" > "$dir/b-chief.log" 2>&1 &
chief=$!
pids+=("$chief")
await_event "$dir/b.jsonl" "$(train_event 1 3)" 120
add_day 2 "$dir/b"
await_event "$dir/b.jsonl" "$(train_event 1 5)" 120
kill -TERM "$chief"
await_exit "$chief" 120
[ "$status" = 0 ] || fail "run b: the chief exited $status after SIGTERM, not 0"
tasks_exit_0 b
grep -q '"event":"stream_end","clock":10,"by":"SIGTERM"' "$dir/b.jsonl" \
  || fail "run b: SIGTERM did not end the stream at clock 10"
[ -f "$dir/b.ckpt/ckpt-000000000010/MANIFEST.json" ] || fail "run b: no final checkpoint at 10"
"$bin" simulate --dataset "criteo:$dir/gen/train" "${common[@]}" --workers 2 --ps 2 \
  --eval-every 0 --steps 10 --metrics "$dir/r.jsonl" > "$dir/r.log" 2>&1 \
  || fail "the reference run failed"
losses() { "$python" "$root/tests/train_losses.py" "$1"; }  # worker clock loss, each
[ "$(losses "$dir/b.jsonl" | wc -l)" = 20 ] || fail "run b: not 10 clocks of 2 workers"
diff <(losses "$dir/r.jsonl") <(losses "$dir/b.jsonl") \
  || fail "the followed processes' losses differ from the run that read both days in one go"
echo "PASS"
