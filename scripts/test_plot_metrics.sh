#!/usr/bin/env bash
# Self-check of scripts/plot_metrics.py: trains two small synthetic runs (ssp and async), plots
# them, checks the PNG (magic bytes, > 10 kB), plots two CTR runs (AUC, each run's own settings),
# and checks that bad input exits 2 naming the file.
# Usage: scripts/test_plot_metrics.sh [path/to/actorps]   (default: build/actorps; ~5 s)
# Exit status: 0 pass, 1 a check failed, 2 usage/missing binary, 77 no python3 with matplotlib
# (for CTest's SKIP_RETURN_CODE).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
actorps=${1:-$root/build/actorps}
plot="$root/scripts/plot_metrics.py"
[ -x "$actorps" ] || { echo "test_plot_metrics: $actorps is missing or not executable" >&2; exit 2; }

source "$root/scripts/python_with.sh"
python=$(python_with matplotlib) || { echo "test_plot_metrics: SKIP: no python3 with matplotlib (apt-get install python3-matplotlib)" >&2; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok    $*"; }
fail() { echo "FAIL  $*" >&2; failures=$((failures + 1)); }

run_sim() {  # run_sim OUT.jsonl FLAGS...
  local out=$1; shift
  timeout 120 "$actorps" simulate --dataset synthetic --model 784-32-10 --synthetic-rows 2048 \
    --synthetic-test-rows 512 --workers 2 --ps 2 --steps 120 --eval-every 20 --no-progress \
    --metrics "$out" "$@" > "$tmp/sim.log" 2>&1 || { cat "$tmp/sim.log" >&2; return 1; }
}
run_sim "$tmp/ssp.jsonl" --mode ssp --staleness 2 || { echo "FAIL  ssp simulation" >&2; exit 1; }
run_sim "$tmp/async.jsonl" --mode async --seed 2 || { echo "FAIL  async simulation" >&2; exit 1; }

check_png() {  # check_png FILE WHAT
  local f=$1 what=$2 size magic
  [ -f "$f" ] || { fail "$what: $f was not written"; return; }
  magic=$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')
  [ "$magic" = 89504e470d0a1a0a ] || { fail "$what: $f is not a PNG (starts with $magic)"; return; }
  size=$(wc -c < "$f")
  [ "$size" -gt 10240 ] || { fail "$what: $f is only $size bytes"; return; }
  pass "$what ($size bytes)"
}

# 1. two runs overlaid, with labels and a title
if "$python" "$plot" "$tmp/ssp.jsonl" "$tmp/async.jsonl" -o "$tmp/out/two.png" \
    --label "ssp S=2" --label async --title "plot_metrics self-test" > "$tmp/log" 2>&1; then
  check_png "$tmp/out/two.png" "two runs"
else
  fail "two runs: exit $?: $(cat "$tmp/log")"
fi

# 2. one run, default labels, raw train loss, plus events the plotter must tolerate: unknown
#    kinds and failure/recovery (drawn as vertical lines)
cp "$tmp/ssp.jsonl" "$tmp/events.jsonl"
cat >> "$tmp/events.jsonl" <<'EOF'
{"event":"failure","worker":1,"clock":40,"wall_s":0.05}

{"event":"recovery","worker":1,"clock":45,"wall_s":0.07}
{"event":"something_new","value":[1,2,3]}
EOF
if "$python" "$plot" "$tmp/events.jsonl" -o "$tmp/one.png" --smooth 1 > "$tmp/log" 2>&1; then
  check_png "$tmp/one.png" "one run with failure/recovery/unknown events"
else
  fail "one run with extra events: exit $?: $(cat "$tmp/log")"
fi

# 2b. a torn last line (a run killed while writing it): skipped with a warning, the plot drawn
{ cat "$tmp/ssp.jsonl"; printf '{"event":"train","clock":119,"wo'; } > "$tmp/torn.jsonl"
if "$python" "$plot" "$tmp/torn.jsonl" -o "$tmp/torn.png" > "$tmp/log" 2>&1; then
  if grep -qF "$tmp/torn.jsonl:$(wc -l < "$tmp/ssp.jsonl" | awk '{print $1 + 1}'): skipped a torn last line" "$tmp/log"; then
    check_png "$tmp/torn.png" "a torn last line skipped with a warning"
  else
    fail "torn last line: no warning naming it: $(cat "$tmp/log")"
  fi
else
  fail "torn last line: exit $?: $(cat "$tmp/log")"
fi

# 3. CTR runs (two lr runs at different rates, with GAUC): read as CTR runs, AUC and logloss
#    panels, the shared settings under the title and each run's own rate in its label
"$actorps" gen-data criteo --out "$tmp/criteo" --rows 3000 --test-rows 500 > /dev/null
for rate in 0.01 0.003; do
  timeout 120 "$actorps" simulate --model lr --dataset "criteo:$tmp/criteo/train.tsv" \
    --test "$tmp/criteo/test.tsv" --steps 40 --eval-every 10 --batch 64 --no-progress \
    --gauc-group C1 --lr "$rate" --metrics "$tmp/ctr_$rate.jsonl" > "$tmp/sim.log" 2>&1 \
    || { cat "$tmp/sim.log" >&2; echo "FAIL  ctr simulation" >&2; exit 1; }
done
if "$python" - "$root/scripts" "$tmp" > "$tmp/log" 2>&1 <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import plot_metrics as p
tmp = sys.argv[2]
runs = [p.load_run(f"{tmp}/ctr_{rate}.jsonl") for rate in ("0.01", "0.003")]
assert all(r.ctr for r in runs), "an lr run not read as a CTR run"
assert not p.load_run(f"{tmp}/ssp.jsonl").ctr, "an MLP run read as a CTR run"
assert all(r.final("test_gauc") is not None for r in runs), "no final GAUC"
subtitle, own = p.run_titles(runs)
assert "model lr:ftrl" in subtitle and "batch 64" in subtitle, subtitle
assert "lr 0.01 " in own[0] and "lr 0.003 " in own[1], own
assert "model" not in own[0] and "batch" not in own[1], own
EOF
then
  pass "CTR runs: AUC read, each run titled by its own settings"
else
  fail "CTR runs: $(cat "$tmp/log")"
fi
if "$python" "$plot" "$tmp/ctr_0.01.jsonl" "$tmp/ctr_0.003.jsonl" -o "$tmp/ctr.png" > "$tmp/log" 2>&1; then
  check_png "$tmp/ctr.png" "two CTR runs"
else
  fail "two CTR runs: exit $?: $(cat "$tmp/log")"
fi

# 4. bad input: exit status 2 and a message naming the file (and the line where there is one)
expect_error() {  # expect_error WHAT PATTERN FILES...
  local what=$1 pattern=$2 status=0; shift 2
  "$python" "$plot" "$@" -o "$tmp/bad.png" > "$tmp/log" 2>&1 || status=$?
  if [ "$status" -ne 2 ]; then
    fail "$what: exit $status, expected 2: $(cat "$tmp/log")"
  elif ! grep -qF -- "$pattern" "$tmp/log"; then
    fail "$what: message does not contain '$pattern': $(cat "$tmp/log")"
  else
    pass "$what -> exit 2: $(head -n 1 "$tmp/log")"
  fi
}
expect_error "missing file" "$tmp/nope.jsonl" "$tmp/ssp.jsonl" "$tmp/nope.jsonl"
{ head -n 3 "$tmp/ssp.jsonl"; echo 'this is {not json'; tail -n +4 "$tmp/ssp.jsonl"; } > "$tmp/garbage.jsonl"
expect_error "garbage line" "$tmp/garbage.jsonl:4:" "$tmp/garbage.jsonl"
grep -v '"event":"eval"' "$tmp/ssp.jsonl" > "$tmp/noeval.jsonl"
expect_error "no eval events" "$tmp/noeval.jsonl: no eval events" "$tmp/noeval.jsonl"
: > "$tmp/empty.jsonl"
expect_error "empty file" "$tmp/empty.jsonl" "$tmp/empty.jsonl"
[ -f "$tmp/bad.png" ] && fail "an error run still wrote $tmp/bad.png"

if [ "$failures" -ne 0 ]; then
  echo "test_plot_metrics: $failures check(s) failed" >&2
  exit 1
fi
echo "test_plot_metrics: all checks passed"
