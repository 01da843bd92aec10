#!/usr/bin/env bash
# Usage: scripts/bench/scale_copy_ahead.sh [-o FILE] [-b BUILD_DIR] [-n ROWS] [-r ROUNDS]
#
# A change of shards across processes (one process per task on 127.0.0.1, mutual TLS, sync,
# 2 workers): `actorps scale --ps 3` takes a spare ps task in at a quarter of a `dlrm` run of two
# epochs over ROWS `gen-data criteo` rows (default 400 000; --admit-after 1: every value seen a
# row, dim 16), asked once the run is a quarter through, once with --copy-ahead never
# (the rows move at the change's clock) and once with always (copied to the spare's shard while
# the run trains, the hand-overs at the clock holding what changed since), alternated for
# ROUNDS rounds (default 2; the order flips each round). Figures per run, from the chief's
# metrics: the resize event's freeze_ms, handed_over_bytes, copied_ahead_bytes, copy_ms, and
# lost_s as scripts/bench/live_resize.sh counts it (the gap at the change's clock less a clock,
# plus what the clocks during the copy took beyond as many clocks; a clock's time is the mean of
# the 50 before the copy, or before the change, the reports coming in batches). The JSON (default
# BUILD_DIR/bench/scale_copy_ahead.json) holds every run and the medians per policy.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" rows=400000 rounds=2
while getopts "o:b:n:r:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) rows="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
if ! [[ "$rows" =~ ^[0-9]+$ && "$rounds" =~ ^[0-9]+$ ]] || (( rows < 1000 || rounds < 1 )); then
  echo "scale_copy_ahead.sh: -n must be 1000 or more, -r 1 or more" >&2
  exit 2
fi
out="$(realpath -m "${out:-$build/bench/scale_copy_ahead.json}")"
mkdir -p "$(dirname "$out")"
name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bin="$build/actorps"
require_bench "$bin"
dir="$(mktemp -d)"
. "$root/tests/cluster_test_lib.sh"  # start_job, start_spare_ps, ask_scale; cleans $dir up

scale_clusters 1 0
"$bin" gen-data criteo --out "$dir/criteo" --rows "$rows" --test-rows 400 > /dev/null
# Two epochs (2 workers, batch 256): the change, the copy's lead (2 s) after the request at a
# quarter, leaves clocks enough after it.
steps=$(( rows / 256 ))
(( steps >= 200 )) || steps=200
train=(--model dlrm --admit-after 1 --dataset "criteo:$dir/criteo/train.tsv"
       --test "$dir/criteo/test.tsv" --mode sync --batch 256 --steps "$steps" --eval-every 0
       --seed 5 --no-progress)

runs=()
for ((r = 1; r <= rounds; ++r)); do
  order=(never always)
  (( r % 2 == 0 )) && order=(always never)
  for policy in "${order[@]}"; do
    run="$policy$r"
    echo "$name: round $r, --copy-ahead $policy" >&2
    start_job "$run" --copy-ahead "$policy"
    start_spare_ps "$run"
    await_event "$dir/$run.jsonl" "\"event\":\"train\",\"worker\":[0-9]+,\"clock\":$(( steps / 4 )),"
    ask_scale admin:0 --ps 3
    [ "$scaled" = 0 ] || fail "$run: the change to 3 shards exited $scaled: $said"
    all_exit_0 "$run" ps:0 ps:1 worker:0 worker:1
    await_exit "$(eval echo "\$pid_${run}_ps_2")" 120
    [ "$status" = 0 ] || fail "$run: ps:2 exited $status"
    runs+=("$run")
  done
done

"$python" - "$dir" "$out" "$rows" "$steps" "${runs[@]}" <<'PY'
import json, os, statistics, sys

d, out, rows, steps, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]

def figures(run):
    events = [json.loads(l) for l in open(f"{d}/{run}.jsonl")]
    r = [e for e in events if e["event"] == "resize"]
    assert len(r) == 1, f"{run}: {len(r)} resize events"
    r = r[0]
    at = r["clock"]
    last, first = {}, {}
    for e in events:
        if e["event"] == "train":
            c = e["clock"]
            last[c] = max(last.get(c, e["wall_s"]), e["wall_s"])
            first[c] = min(first.get(c, e["wall_s"]), e["wall_s"])
    # The workers' reports come in batches (every few milliseconds), so a clock's time is an
    # average over a window, not the gap between two reports.
    copy_from = r.get("copy_from_clock", -1)
    copy_from = copy_from if 0 <= copy_from < at else at
    start = max(1, copy_from - 50)
    per_clock = (last[copy_from - 1] - last[start - 1]) / (copy_from - start)
    copy_lost = (max(0.0, last[at - 1] - last[copy_from] - per_clock * (at - 1 - copy_from))
                 if copy_from < at else 0.0)
    return {"run": run, "clock": at, "freeze_ms": round(r["freeze_ms"], 2),
            "handed_over_bytes": r["handed_over_bytes"], "bytes": r["bytes"],
            "copied_ahead_bytes": r["copied_ahead_bytes"], "copies_ahead": r["copies_ahead"],
            "copy_ms": r["copy_ms"],
            "copy_from_clock": r["copy_from_clock"],
            "ms_per_clock_before": round(per_clock * 1000, 3),
            "lost_in_copy_s": round(copy_lost, 4),
            "lost_s": round(max(0.0, first[at] - last[at - 1] - per_clock) + copy_lost, 4)}

result = {"bench": "scale_copy_ahead",
          "what": f"actorps scale --ps 3 across processes (TLS, sync, 2 workers, dlrm "
                  f"--admit-after 1 on {rows} gen-data criteo rows, {steps} clocks), "
                  f"--copy-ahead never and always",
          "load_average": os.getloadavg()[0], "runs": [figures(r) for r in runs]}
for policy in ("never", "always"):
    mine = [f for f in result["runs"] if f["run"].rstrip("0123456789") == policy]
    result[policy] = {k: statistics.median(f[k] for f in mine)
                      for k in ("freeze_ms", "handed_over_bytes", "copied_ahead_bytes", "lost_s")}
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
