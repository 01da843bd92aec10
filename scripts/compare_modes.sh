#!/usr/bin/env bash
# Trains the same model in every consistency mode (sync, ssp S=0, ssp S=2, async) and draws the
# four runs into one picture with scripts/plot_metrics.py.
# Usage: scripts/compare_modes.sh [--workers N] [--ps N] [--epochs N] [--dataset NAME]
#          [--eval-every N] [--slow worker:I=MS]... [--timeout S] [--keep DIR] [-o OUT.png]
#   defaults: fashion-mnist, 4 workers, 2 shards, 3 epochs, eval every 50 clocks,
#   build/compare_modes.png, JSONL files deleted afterwards (--keep DIR keeps them there),
#   each run killed after --timeout seconds (default 600). --slow is passed to every run
#   (e.g. --slow worker:1=5 shows the straggler effect). About 30-60 s with the defaults.
set -euo pipefail
usage() { sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
actorps="$root/build/actorps"
workers=4 ps=2 epochs=3 dataset=fashion-mnist eval_every=50 timeout_s=600
out="$root/build/compare_modes.png" keep="" slow=() slow_desc=""
while [ $# -gt 0 ]; do
  case $1 in
    --workers) workers=${2:?--workers needs a value}; shift 2 ;;
    --ps) ps=${2:?--ps needs a value}; shift 2 ;;
    --epochs) epochs=${2:?--epochs needs a value}; shift 2 ;;
    --dataset) dataset=${2:?--dataset needs a value}; shift 2 ;;
    --eval-every) eval_every=${2:?--eval-every needs a value}; shift 2 ;;
    --slow) slow+=(--slow "${2:?--slow needs a value, e.g. worker:1=5}"); slow_desc+=", slow $2"; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    -o|--output) out=${2:?-o needs a file}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "compare_modes: unknown argument '$1'" >&2; usage ;;
  esac
done

[ -x "$actorps" ] || { echo "compare_modes: $actorps is missing: run scripts/setup.sh first" >&2; exit 2; }
for v in "$workers" "$ps" "$epochs" "$eval_every" "$timeout_s"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "compare_modes: '$v' is not a whole number" >&2; exit 2; }
done

# Checked before minutes of training.
source "$root/scripts/python_with.sh"
python=$(python_with matplotlib) || { echo "compare_modes: no python3 with matplotlib: apt-get install python3-matplotlib" >&2; exit 2; }

if [ -n "$keep" ]; then
  mkdir -p "$keep"; dir=$(cd "$keep" && pwd)
else
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$(dirname "$out")"

model=()
[ "$dataset" = synthetic ] && model=(--model 784-64-10)   # the small problem needs no big MLP
names=(sync ssp-s0 ssp-s2 async)
modes=("--mode sync" "--mode ssp --staleness 0" "--mode ssp --staleness 2" "--mode async")
files=()
echo "compare_modes: $dataset, $workers workers, $ps shards, $epochs epochs, eval every" \
     "$eval_every clocks$slow_desc (each run at most ${timeout_s} s)"
for i in "${!names[@]}"; do
  f="$dir/${names[$i]}.jsonl"
  start=$SECONDS
  status=0
  # shellcheck disable=SC2086  # the mode string is several flags on purpose
  timeout --kill-after=10 "$timeout_s" "$actorps" simulate ${modes[$i]} \
    --workers "$workers" --ps "$ps" --epochs "$epochs" --dataset "$dataset" "${model[@]}" \
    --eval-every "$eval_every" "${slow[@]}" --no-progress --metrics "$f" \
    > "$dir/${names[$i]}.log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    why="exit $status"
    case $status in 124|137) why="timed out after $timeout_s s" ;; esac
    echo "compare_modes: the ${names[$i]} run failed ($why); the end of its output:" >&2
    tail -n 20 "$dir/${names[$i]}.log" >&2
    exit 1
  fi
  echo "  ${names[$i]} done in $((SECONDS - start)) s"
  files+=("$f")
done

"$python" "$root/scripts/plot_metrics.py" "${files[@]}" -o "$out" \
  --title "actorps consistency modes: $dataset, ${workers} workers, ${ps} shards, ${epochs} epochs$slow_desc" > /dev/null

echo "compare_modes: picture at $(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
if [ -n "$keep" ]; then echo "compare_modes: JSONL files kept in $dir"; fi
"$python" - "${files[@]}" <<'PY'
import json, sys
for path in sys.argv[1:]:
    summary = start = None
    for line in open(path):
        event = json.loads(line)
        if event.get("event") == "summary": summary = event
        if event.get("event") == "start": start = event
    mode = summary["mode"] + (f" s={summary['staleness_bound']}" if summary["mode"] == "ssp" else "")
    print(f"  {mode:9s} final accuracy {summary['final_test_accuracy']:.4f}  "
          f"{summary['samples_per_s']:8.0f} samples/s  max staleness {summary['max_staleness']:3d}  "
          f"({summary['wall_s']:.1f} s)")
PY
