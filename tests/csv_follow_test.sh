#!/usr/bin/env bash
# --follow on a directory of CSV files, a dense model (mlp) in sync mode: three generated days
# (gzip: each of 2 workers reads 240 rows of a day, 5 batches of 48):
#   A  day 2 renamed into the directory while the run holds at the end of day 1: it is trained
#      (its clocks, 48 rows each), and the stop file ends the run (exit 0);
#   B  SIGTERM on a following run: exit 0, a final checkpoint; --resume follows on while day 3
#      is renamed in: every clock's loss equals that of a run that read the 3 days in one go;
#   C  a bad line in a file that comes later ends the run (exit 1) naming file, line, column.
# Every wait is for an event the run writes (its metrics file, its log), never a sleep.
# usage: tests/csv_follow_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
python=${python:-python3}
dir=$(mktemp -d /tmp/actorps-csv-follow.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Day N: 480 rows of three classes of 4 features (a header first), seeded by N.
mkdir "$dir/gen"
"$python" - "$dir/gen" <<'PY'
import gzip, random, sys
for day in (1, 2, 3, 9):
    rng = random.Random(day)
    lines = ["label,f0,f1,f2,f3"]
    for r in range(480):
        label = r % 3
        lines.append(",".join([str(label)] + ["%.6f" % ((2.0 if j % 3 == label else 0.0)
                                                        + rng.gauss(0, 1)) for j in range(4)]))
    text = "\n".join(lines) + "\n"
    if day == 9:
        open(sys.argv[1] + "/test.csv", "w").write(text)
    else:
        with gzip.open("%s/day-%d.csv.gz" % (sys.argv[1], day), "wt") as f:
            f.write(text)
PY
common=(--test "$dir/gen/test.csv" --model mlp:4-8-3 --workers 2 --ps 1 --batch 48 --mode sync
        --lr-schedule constant --eval-every 0 --no-progress)
add_day() {  # N DIR [FILE]: day N (or FILE) written as a followed directory wants it: renamed
  cp "${3:-$dir/gen/day-$1.csv.gz}" "$2/.day-$1.tmp"
  mv "$2/.day-$1.tmp" "$2/day-$1.csv.gz"
}
wait_for() {  # FILE PATTERN PID: until FILE holds PATTERN (fails if PID ends first, or 120 s)
  timeout 120 grep -q -m1 -e "$2" <(tail -n +1 -F --pid="$3" "$1" 2> /dev/null) \
    || { cat "$1" >&2 || true; fail "no '$2' in $1"; }
}
finish() {  # PID LOG STATUS: waits for the run; it must exit STATUS (0)
  local status=0
  wait "$1" || status=$?
  [ "$status" = "${3:-0}" ] || { cat "$2" >&2; fail "$2: exit $status, not ${3:-0}"; }
}
train_event() { echo "\"event\":\"train\",\"worker\":$1,\"clock\":$2,"; }

# --- A: a file renamed in later is trained; the stop file ends the run -----------------------
mkdir "$dir/a"
add_day 1 "$dir/a"
"$bin" simulate --dataset "csv:$dir/a" "${common[@]}" --follow --stop-file "$dir/a.stop" \
  --metrics "$dir/a.jsonl" > "$dir/a.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/a.jsonl" "$(train_event 1 3)" "$pid"
# Day 1 holds 5 batches a worker: clock 4 waits for the next file.
grep -q '"event":"train","worker":[01],"clock":4,' "$dir/a.jsonl" \
  && fail "run a trained clock 4 before day 2 came"
add_day 2 "$dir/a"
wait_for "$dir/a.jsonl" '"event":"stream","files":\["day-2.csv.gz"\],"rows":480,' "$pid"
wait_for "$dir/a.jsonl" "$(train_event 1 8)" "$pid"
touch "$dir/a.stop"
finish "$pid" "$dir/a.log"
grep -q "10 clocks, 960 samples" "$dir/a.log" \
  || { cat "$dir/a.log"; fail "run a: not 10 clocks of 2 x 48 rows"; }
for w in 0 1; do
  for c in 5 9; do  # day 2's clocks, each of 48 rows
    grep -q "$(train_event $w $c)\"loss\":[-0-9.e]*,\"samples\":48," "$dir/a.jsonl" \
      || fail "run a: worker $w did not train clock $c of day 2"
  done
done

# --- B: SIGTERM, a final checkpoint, --resume while day 3 comes: exact ----------------------
mkdir "$dir/b"
add_day 1 "$dir/b"
b=(simulate --dataset "csv:$dir/b" "${common[@]}" --follow --stop-file "$dir/b.stop"
   --checkpoint-dir "$dir/b.ckpt" --metrics "$dir/b.jsonl")
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
"$bin" "${b[@]}" --resume > "$dir/b2.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/b2.log" "following $dir/b" "$pid"
add_day 3 "$dir/b"
wait_for "$dir/b.jsonl" "$(train_event 1 13)" "$pid"
touch "$dir/b.stop"
finish "$pid" "$dir/b2.log"
grep -q "15 clocks, 1440 samples; this run from clock 10" "$dir/b2.log" \
  || { cat "$dir/b2.log"; fail "run b: the resumed run did not train clocks 10 to 14"; }
mkdir "$dir/r"
cp "$dir"/gen/day-*.csv.gz "$dir/r/"
"$bin" simulate --dataset "csv:$dir/r" "${common[@]}" --steps 15 --metrics "$dir/r.jsonl" \
  > "$dir/r.log" 2>&1 || { cat "$dir/r.log"; fail "the reference run failed"; }
losses() { "$python" "$root/tests/train_losses.py" "$1"; }  # worker clock loss, each
[ "$(losses "$dir/b.jsonl" | wc -l)" = 30 ] || fail "run b: not 15 clocks of 2 workers"
diff <(losses "$dir/r.jsonl") <(losses "$dir/b.jsonl") \
  || fail "the followed, stopped and resumed run's losses differ from the run in one go"

# --- C: a bad line in a file that comes later: exit 1, naming it ------------------------------
mkdir "$dir/c"
add_day 1 "$dir/c"
zcat "$dir/gen/day-2.csv.gz" | sed '41s/^\([0-9]\),[^,]*,/\1,oops,/' | gzip > "$dir/bad.csv.gz"
"$bin" simulate --dataset "csv:$dir/c" "${common[@]}" --follow --stop-file "$dir/c.stop" \
  --metrics "$dir/c.jsonl" > "$dir/c.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_for "$dir/c.jsonl" "$(train_event 1 3)" "$pid"
add_day 2 "$dir/c" "$dir/bad.csv.gz"
finish "$pid" "$dir/c.log" 1
grep -q "bad_data: $dir/c/day-2.csv.gz:41:3: 'oops' is not a number (field 2)" "$dir/c.log" \
  || { cat "$dir/c.log"; fail "run c: the bad line is not named"; }
echo "PASS"
