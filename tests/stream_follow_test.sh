#!/usr/bin/env bash
# --follow from the command line, on a generated 3-day Criteo stream (gzip: each of 2 workers
# reads 500 rows of a day, 5 batches of 96), sync mode:
#   A  day 2 written into the directory while the run holds at the end of day 1: it is trained
#      (its clocks, the summary's samples), evaluations come on schedule, the stop file ends
#      the run as at its last clock (exit 0);
#   B  SIGTERM on a following run: exit 0, a final checkpoint; --resume follows on while day 3
#      is written: every clock's loss and the exported model equal those of a run that read
#      the 3 days in one go and never stopped;
#   C  bad flags name themselves (exit 2);
#   D  a worker killed mid-stream: its replacement resumes its predecessor's position, behind the
#      others, and still trains every batch of its part up to the stop.
# Every wait is for an event the run writes (its metrics file, its log), never a sleep.
# usage: tests/stream_follow_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-follow.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" gen-data criteo --days 3 --rows 1000 --test-rows 500 --gzip --seed 4 --out "$dir/gen" \
  > /dev/null
common=(--test "$dir/gen/test.tsv.gz" --model lr --workers 2 --ps 1 --batch 96 --mode sync
        --lr-schedule constant --no-progress)
add_day() {  # N DIR: day N written as a followed directory wants: a hidden name, renamed
  cp "$dir/gen/train/day-$1.tsv.gz" "$2/.day-$1.tmp"
  mv "$2/.day-$1.tmp" "$2/day-$1.tsv.gz"
}
wait_for() {  # FILE PATTERN PID: until FILE holds PATTERN (fails if PID ends first, or 120 s)
  timeout 120 grep -q -m1 -e "$2" <(tail -n +1 -F --pid="$3" "$1" 2> /dev/null) \
    || { cat "$1" >&2 || true; fail "no '$2' in $1"; }
}
finish() {  # PID LOG: waits for the run; it must exit 0
  local status=0
  wait "$1" || status=$?
  [ "$status" = 0 ] || { cat "$2" >&2; fail "$2: exit $status, not 0"; }
}
train_event() { echo "\"event\":\"train\",\"worker\":$1,\"clock\":$2,"; }

# --- A: a file that appears later is trained; evaluations on schedule; the stop file --------
mkdir "$dir/a"
add_day 1 "$dir/a"
"$bin" simulate --dataset "criteo:$dir/a" "${common[@]}" --eval-every 4 --follow \
  --stop-file "$dir/a.stop" --metrics "$dir/a.jsonl" > "$dir/a.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/a.jsonl" "$(train_event 1 3)" "$pid"
# Day 1 holds 5 batches a worker: clock 4 waits for the keys of clock 5, which are not there.
grep -q '"event":"train","worker":[01],"clock":4,' "$dir/a.jsonl" \
  && fail "run a trained clock 4 before day 2 came"
add_day 2 "$dir/a"
wait_for "$dir/a.jsonl" '"event":"stream","files":\["day-2.tsv.gz"\]' "$pid"
wait_for "$dir/a.jsonl" "$(train_event 1 8)" "$pid"
touch "$dir/a.stop"
finish "$pid" "$dir/a.log"
grep -q "10 clocks, 1920 samples" "$dir/a.log" \
  || { cat "$dir/a.log"; fail "run a: not 10 clocks of 2 x 96 rows"; }
grep -q "settings: .* epochs=none (a followed stream)" "$dir/a.log" \
  || fail "run a: its settings line names epochs of a followed stream"
grep -Eq '"event":"start",.*"epochs":0(\.0)?[,}]' "$dir/a.jsonl" \
  || fail "run a: its start event gives epochs other than 0"
grep -q '"event":"start",.*"clocks":null,' "$dir/a.jsonl" \
  || fail "run a: its start event gives a number of clocks, which a followed stream has not"
grep -q '"event":"stream_end","clock":10,"by":"the stop file '"$dir/a.stop"'"' "$dir/a.jsonl" \
  || fail "run a: no stream_end at clock 10 by the stop file"
for w in 0 1; do
  for c in 5 9; do  # day 2's clocks, each of 96 rows
    grep -q "$(train_event $w $c)\"loss\":[-0-9.e]*,\"samples\":96," "$dir/a.jsonl" \
      || fail "run a: worker $w did not train clock $c of day 2"
  done
done
for c in 4 8 10; do  # on schedule while it streams, and the final one
  grep -q "\"event\":\"eval\",\"clock\":$c," "$dir/a.jsonl" \
    || fail "run a: no evaluation at clock $c"
done

# --- B: SIGTERM, a final checkpoint, --resume while day 3 comes: exact ----------------------
mkdir "$dir/b"
add_day 1 "$dir/b"
b=(simulate --dataset "criteo:$dir/b" "${common[@]}" --eval-every 0 --follow
   --stop-file "$dir/b.stop" --checkpoint-dir "$dir/b.ckpt" --metrics "$dir/b.jsonl")
"$bin" "${b[@]}" > "$dir/b1.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/b.jsonl" "$(train_event 1 3)" "$pid"
add_day 2 "$dir/b"
wait_for "$dir/b.jsonl" "$(train_event 1 5)" "$pid"
kill -TERM "$pid"
finish "$pid" "$dir/b1.log"
grep -q '"event":"stream_end","clock":10,"by":"SIGTERM"' "$dir/b.jsonl" \
  || { cat "$dir/b1.log"; fail "run b: SIGTERM did not end the stream at clock 10"; }
[ -f "$dir/b.ckpt/ckpt-000000000010/MANIFEST.json" ] || fail "run b: no final checkpoint at 10"
"$bin" "${b[@]}" --resume --export-dir "$dir/b.export" > "$dir/b2.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/b2.log" "following $dir/b" "$pid"
add_day 3 "$dir/b"
wait_for "$dir/b.jsonl" "$(train_event 1 13)" "$pid"
touch "$dir/b.stop"
finish "$pid" "$dir/b2.log"
grep -q "15 clocks, 2880 samples; this run from clock 10" "$dir/b2.log" \
  || { cat "$dir/b2.log"; fail "run b: the resumed run did not train clocks 10 to 14"; }
"$bin" simulate --dataset "criteo:$dir/gen/train" "${common[@]}" --eval-every 0 --steps 15 \
  --metrics "$dir/r.jsonl" --export-dir "$dir/r.export" > "$dir/r.log" 2>&1 \
  || { cat "$dir/r.log"; fail "the reference run failed"; }
losses() { "${python:-python3}" "$root/tests/train_losses.py" "$1"; }  # worker clock loss, each
[ "$(losses "$dir/b.jsonl" | wc -l)" = 30 ] || fail "run b: not 15 clocks of 2 workers"
diff <(losses "$dir/r.jsonl") <(losses "$dir/b.jsonl") \
  || fail "the followed, stopped and resumed run's losses differ from the run in one go"
cmp "$dir/r.export/1/model.capnp" "$dir/b.export/1/model.capnp" \
  || fail "the followed, stopped and resumed run exports another model"

# --- D: a worker killed mid-stream: its replacement, behind the others, trains all its part ---
mkdir "$dir/d"
add_day 1 "$dir/d"
add_day 2 "$dir/d"
"$bin" simulate --dataset "criteo:$dir/d" "${common[@]}" --eval-every 0 --follow \
  --stop-file "$dir/d.stop" --kill worker:1@clock=3 --metrics "$dir/d.jsonl" > "$dir/d.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/d.jsonl" '"event":"recovery","role":"worker","index":1,' "$pid"
# Both days hold 10 batches a worker: worker 0 computes clock 8 (clock 9's keys are there), then
# waits for more files; the stop ends the stream at batch 10 of every worker.
wait_for "$dir/d.jsonl" "$(train_event 0 8)" "$pid"
touch "$dir/d.stop"
finish "$pid" "$dir/d.log"
grep -q '"event":"stream_end","clock":10,' "$dir/d.jsonl" \
  || { cat "$dir/d.log"; fail "run d: the stream did not end at batch 10"; }
grep -Eq "[0-9]+ clocks, 1920 samples" "$dir/d.log" \
  || { cat "$dir/d.log"; fail "run d: not 2 x 10 batches of 96 rows trained, every row once"; }

# --- C: bad flags name themselves -----------------------------------------------------------
refused() {  # PATTERN FLAGS...: exit 2 with PATTERN in the output
  local pattern=$1 out status=0
  shift
  out=$("$bin" simulate "$@" 2>&1) || status=$?
  [ "$status" = 2 ] || fail "exit $status, not 2, for $*: $out"
  grep -q -e "$pattern" <<< "$out" || fail "no '$pattern' for $*: $out"
}
refused "^actorps simulate: --follow needs a directory" \
  --dataset "criteo:$dir/gen/train/day-1.tsv.gz" "${common[@]}" --follow
refused "^actorps simulate: --follow reads the stream once.*--epochs" \
  --dataset "criteo:$dir/a" "${common[@]}" --follow --epochs 2
refused "^actorps simulate: --stop-file needs --follow" \
  --dataset "criteo:$dir/a" "${common[@]}" --stop-file "$dir/x.stop"
refused "^actorps simulate: --follow needs --dataset csv:DIR, libsvm:DIR or criteo:DIR" \
  --dataset synthetic --model 784-16-10 --follow
refused "^actorps simulate: --stop-file $dir/a/stop lies in the followed directory" \
  --dataset "criteo:$dir/a" "${common[@]}" --follow --stop-file "$dir/a/stop"
echo "PASS"
