#!/usr/bin/env bash
# Usage: scripts/bench/live_resize.sh [-o FILE] [-b BUILD_DIR] [-n CTR_ROWS | -i GEN_DIR] [-c CLOCK] [-s SPARSE_CLOCK] [-k CASES] [-p NEW_PS] [-r RESTART_JSON]
#
# A change of shard count while a run trains (`--resize ps=NEW_PS@clock=CLOCK`, one process,
# sync, 2 workers, from 2 shards), for the default MLP (784-256-128-10 on Fashion-MNIST), the
# large one (784-2048-2048-10), the README's CTR example (`dlrm` on CTR_ROWS `gen-data criteo`
# rows, default 2 000 000) and a large sparse table (`sparse`: the same with `--admit-after 1`,
# every key seen a row, resized in the middle of its one epoch; the summary gives its rows).
# The others run to CLOCK + 60 clocks (default CLOCK 200). -i GEN_DIR: the CTR data is a `gen-data
# criteo` output directory instead (train.tsv, or train/ of --days: read as a stream), -s the
# sparse case's clock instead of its epoch's middle (it then runs to SPARSE_CLOCK + 60), -k the
# cases to run (comma-separated, default mlp,large,ctr,sparse).
#
# Figures per case, from the run's metrics file: the resize event's bytes (the rows, values and
# optimizer state that changed shard), buckets and blocks moved, freeze_ms (states in hand to
# training again; of it cut_ms reading and cutting the hand-overs, move_ms the shards' moves)
# and GB/s (bytes over freeze); ms_per_clock_before / _after (median gap between the chief's
# reports of consecutive clocks, 50 clocks each side) and samples_per_s likewise;
# lost_s, the training time the change cost: the gap from clock CLOCK - 1's last report to clock
# CLOCK's first, less a median clock, plus what the clocks during the copy ahead (the sparse
# rows copied while the run trains, from copy_from_clock: copy_ms, copied_ahead_bytes) took
# beyond a median clock each (lost_in_copy_s; samples_per_s_during_copy). With -r, a resize_restart.json (scripts/bench/
# resize_restart.sh, the stop-the-world way: checkpoint, new process, --resume --ps), each case
# it has gets lost_s / its stop_to_first_clock_s. The JSON (default BUILD_DIR/bench/
# live_resize.json) holds them. About 5 min at the defaults on 2 cores; `-n 20000 -c 20` takes
# seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" ctr_rows=2000000 clock=200 new_ps=3 restart="" input="" sparse_clock=""
cases=mlp,large,ctr,sparse
while getopts "o:b:n:i:c:s:k:p:r:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) ctr_rows="$OPTARG" ;;
    i) input="$(realpath -m "$OPTARG")" ;;
    c) clock="$OPTARG" ;;
    s) sparse_clock="$OPTARG" ;;
    k) cases="$OPTARG" ;;
    p) new_ps="$OPTARG" ;;
    r) restart="$(realpath -m "$OPTARG")" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/live_resize.json}")"
mkdir -p "$(dirname "$out")"
if ! [[ "$ctr_rows" =~ ^[0-9]+$ && "$clock" =~ ^[0-9]+$ && "$new_ps" =~ ^[0-9]+$ ]] \
   || (( ctr_rows < 1000 || clock < 10 || new_ps < 1 )); then
  echo "live_resize.sh: -n must be 1000 or more, -c 10 or more, -p 1 or more" >&2
  exit 2
fi
[[ -z "$restart" || -f "$restart" ]] || { echo "live_resize.sh: -r $restart: no such file" >&2; exit 2; }
[[ -z "$sparse_clock" || ( "$sparse_clock" =~ ^[0-9]+$ && "$sparse_clock" -ge 10 ) ]] \
  || { echo "live_resize.sh: -s must be 10 or more" >&2; exit 2; }
[[ "$cases" =~ ^(mlp|large|ctr|sparse)(,(mlp|large|ctr|sparse))*$ ]] \
  || { echo "live_resize.sh: -k $cases: expected cases of mlp,large,ctr,sparse" >&2; exit 2; }

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps"
require_bench "$sim"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

criteo_data "$input" "$tmp/criteo"
sparse_steps=(--epochs 1)
if [[ -n "$sparse_clock" ]]; then
  sparse_steps=(--steps $((sparse_clock + 60)))
else
  sparse_clock=$(( ctr_rows / 2 / 256 / 2 ))  # the middle of its epoch (2 workers, batch 256)
  (( sparse_clock >= 10 )) || sparse_clock=10
fi

mlp=(--model 784-256-128-10 --steps $((clock + 60)))
large=(--model 784-2048-2048-10 --steps $((clock + 60)))
ctr=(--model dlrm --dataset "criteo:$train" --test "$data/test.tsv" --steps $((clock + 60)))
sparse=("${ctr[@]:0:6}" --admit-after 1 "${sparse_steps[@]}")

for kind in ${cases//,/ }; do
  at=$clock
  [[ $kind == sparse ]] && at=$sparse_clock
  echo "$name: $kind: 2 -> $new_ps shards at clock $at" >&2
  declare -n flags=$kind
  if ! timeout 1800 "$sim" simulate "${flags[@]}" --no-progress --mode sync --workers 2 --ps 2 \
         --eval-every 0 --resize "ps=$new_ps@clock=$at" --metrics "$tmp/$kind.jsonl" \
         > "$tmp/$kind.log" 2>&1; then
    cat "$tmp/$kind.log" >&2
    echo "$name: the $kind run failed" >&2
    exit 1
  fi
  unset -n flags
done

python3 - "$tmp" "$out" "$ctr_rows" "$clock" "$new_ps" "$restart" "$cases" <<'PY'
import json, os, statistics, sys

tmp, out, ctr_rows, clock, new_ps, restart, cases = sys.argv[1:]
cases = cases.split(",")
restart = json.load(open(restart)) if restart else {}

def case(kind):
    events = [json.loads(l) for l in open(f"{tmp}/{kind}.jsonl")]
    resize = [e for e in events if e["event"] == "resize"]
    assert len(resize) == 1, f"{kind}: {len(resize)} resize events"
    r = resize[0]
    at = r["clock"]
    first, last, samples = {}, {}, {}
    for e in events:
        if e["event"] != "train":
            continue
        c = e["clock"]
        first[c] = min(first.get(c, e["wall_s"]), e["wall_s"])
        last[c] = max(last.get(c, e["wall_s"]), e["wall_s"])
        samples[c] = samples.get(c, 0) + e["samples"]
    def gaps(clocks):
        return [last[c] - last[c - 1] for c in clocks if c in last and c - 1 in last]
    # With a copy ahead (from copy_from_clock to the change), "before" ends where it began, and
    # the clocks it slowed count as lost beside the gap at the change.
    copy_from = r.get("copy_from_clock", -1)
    copy_from = copy_from if copy_from is not None and 0 <= copy_from < at else at
    before = gaps(range(max(1, copy_from - 50), copy_from)) or gaps(range(max(1, at - 50), at))
    during = gaps(range(copy_from + 1, at))
    after = gaps(range(at + 2, at + 52))
    per_clock = statistics.median(before)
    after_clock = statistics.median(after) if after else None
    gap = first[at] - last[at - 1]
    copy_lost = sum(max(0.0, g - per_clock) for g in during)
    res = {
        "clock": at, "from": r["from"], "to": r["to"], "bytes": r["bytes"],
        "buckets": r["buckets"], "blocks": r["blocks"], "freeze_ms": round(r["freeze_ms"], 2),
        # (not in the events of builds before the move in place: None then)
        "cut_ms": r.get("cut_ms") and round(r["cut_ms"], 2),
        "move_ms": r.get("move_ms") and round(r["move_ms"], 2),
        "handed_over_bytes": r.get("handed_over_bytes"),
        "gb_per_s": round(r["bytes"] / (r["freeze_ms"] / 1000) / 1e9, 3) if r["freeze_ms"] else None,
        "ms_per_clock_before": round(per_clock * 1000, 3),
        "ms_per_clock_after": round(after_clock * 1000, 3) if after_clock else None,
        "samples_per_s_before": round(samples.get(at - 1, 0) / per_clock) if per_clock else None,
        "samples_per_s_after": round(samples.get(at + 1, 0) / after_clock) if after_clock else None,
        "copy_from_clock": r.get("copy_from_clock"), "copy_ms": r.get("copy_ms"),
        "copied_ahead_bytes": r.get("copied_ahead_bytes"), "copies_ahead": r.get("copies_ahead"),
        "ms_per_clock_during_copy": round(statistics.median(during) * 1000, 3) if during else None,
        "samples_per_s_during_copy":
            round(samples.get(at - 1, 0) / statistics.median(during)) if during else None,
        "lost_in_copy_s": round(copy_lost, 4),
        "lost_s": round(max(0.0, gap - per_clock) + copy_lost, 4),
    }
    summary = [e for e in events if e["event"] == "summary"][-1]
    res["samples"], res["planned_samples"] = summary["samples"], summary["planned_samples"]
    res["sparse_rows"] = sum(sum(tables) for tables in summary.get("sparse_rows", []))
    if kind in restart and isinstance(restart[kind], dict):
        stw = restart[kind].get(f"restart_at_{new_ps}", {}).get("stop_to_first_clock_s")
        if stw:
            res["restart_stop_to_first_clock_s"] = stw
            res["lost_over_restart"] = round(res["lost_s"] / stw, 4)
    return res

result = {
    "bench": "live_resize",
    "what": f"sync, 2 workers, one process: 2 -> {new_ps} shards at clock {clock} (sparse: the "
            f"middle of its epoch)",
    "load_average": os.getloadavg()[0],
}
runs = {"mlp": "784-256-128-10 on Fashion-MNIST", "large": "784-2048-2048-10 on Fashion-MNIST",
        "ctr": f"dlrm on {ctr_rows} gen-data criteo rows",
        "sparse": f"dlrm --admit-after 1 on {ctr_rows} gen-data criteo rows"}
for kind in cases:
    result[kind] = dict(run=runs[kind], **case(kind))
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
