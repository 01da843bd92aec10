#!/usr/bin/env bash
# Usage: scripts/bench/ctr_throughput.sh [-o FILE] [-b BUILD_DIR] [-n ROWS] [-c TOTAL_CLOCKS] [-r REPEATS] [-d DIR]
#
# Training throughput of DLRM on Criteo logs `actorps simulate --model dlrm` (batch
# 256, adam, lr 0.003, the default cosine schedule, 2 shards; its tables at 0.05 with a row for
# every value, as the plain loop's) with W = 1 and W = 2 workers in
# the default ssp mode and W = 2 in sync, against the no-actor baseline actorps_bench_dlrm_loop
# (one thread, the same kernels, the same per-clock arithmetic), plus how fast criteo_reader
# streams rows (actorps_bench_criteo_reader: plain and gzip, one and two parts). Builds nothing.
#
# The data: `actorps gen-data criteo` writes ROWS training rows (default 256000: one epoch of the
# default run) and ROWS / 20 test rows (at most 5000) once into a temp directory, or -d DIR holds
# train.tsv and test.tsv already (-n is then its line count). Every run processes the same
# samples: TOTAL_CLOCKS (default 1000, even) minibatches in all, TOTAL_CLOCKS / W clocks per
# worker; the plain loop runs TOTAL_CLOCKS steps. Each configuration runs REPEATS times (default
# 3), round-robin so that machine noise spreads over all of them. samples/s of a simulation is its
# own figure (chief: workers started → last worker done; the final evaluation is outside it); the
# plain loop times its loop only. The JSON (default BUILD_DIR/bench/ctr_throughput.json) holds
# every run, the medians, overhead_ratio_w1 = W=1 / plain loop, the reader's figures and the load
# average. About 2 min at the defaults on 2 cores; `-n 2000 -c 8 -r 1` takes seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" rows=256000 total=1000 repeats=3 data=""
while getopts "o:b:n:c:r:d:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) rows="$OPTARG" ;;
    c) total="$OPTARG" ;;
    r) repeats="$OPTARG" ;;
    d) data="$(realpath -m "$OPTARG")" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/ctr_throughput.json}")"
if ! [[ "$rows" =~ ^[0-9]+$ && "$total" =~ ^[0-9]+$ && "$repeats" =~ ^[0-9]+$ ]] \
   || (( rows < 2 || total < 2 || total % 2 != 0 || repeats < 1 )); then
  echo "ctr_throughput.sh: -n must be 2 or more, -c even and positive, -r positive" >&2
  exit 2
fi

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps" loop="$build/actorps_bench_dlrm_loop"
reader="$build/actorps_bench_criteo_reader"
for exe in "$sim" "$loop" "$reader"; do require_bench "$exe"; done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
load_before="$(cut -d' ' -f1 /proc/loadavg)"

if [[ -z "$data" ]]; then
  data="$tmp/criteo"
  test_rows=$(( rows / 20 < 1 ? 1 : (rows / 20 > 5000 ? 5000 : rows / 20) ))
  echo "$name: generating $rows training rows and $test_rows test rows..." >&2
  "$sim" gen-data criteo --out "$data" --rows "$rows" --test-rows "$test_rows" >/dev/null
fi
for f in train.tsv test.tsv; do
  [[ -f "$data/$f" ]] || { echo "$name: $data/$f is missing" >&2; exit 1; }
done
rows="$(wc -l <"$data/train.tsv")"  # with -d: the set's size, not -n's

batch=256 optimizer=adam lr=0.003
runs="$tmp/runs.jsonl"  # one line per run: {"config":..., "result": <summary or loop object>}
configs=("plain_loop" "w1_ssp" "w2_ssp" "w2_sync")
for ((r = 1; r <= repeats; ++r)); do
  for config in "${configs[@]}"; do
    metrics=""
    if [[ $config == plain_loop ]]; then
      echo "$name: run $r/$repeats plain loop ($total steps)" >&2
      result="$(timeout 600 "$loop" --train "$data/train.tsv" --batch "$batch" --steps "$total" \
                  --optimizer "$optimizer" --lr "$lr")" \
        || { echo "$name: plain loop run $r failed or took over 600 s" >&2; exit 1; }
    else
      w="${config:1:1}" mode="${config#*_}"
      metrics="$tmp/$config.$r.jsonl"
      echo "$name: run $r/$repeats $config ($((total / w)) clocks per worker)" >&2
      if ! timeout 600 "$sim" simulate --no-progress --model dlrm \
             --dataset "criteo:$data/train.tsv" --test "$data/test.tsv" --batch "$batch" \
             --optimizer "$optimizer" --lr "$lr" --table-lr 0.05 --admit-after 1 \
             --workers "$w" --ps 2 --mode "$mode" \
             --steps $((total / w)) --eval-every 0 --metrics "$metrics" >/dev/null; then
        echo "$name: $config run $r failed or took over 600 s" >&2
        exit 1
      fi
      result="$(grep '"event":"summary"' "$metrics")" \
        || { echo "$name: $config run $r wrote no summary" >&2; exit 1; }
    fi
    echo "{\"config\":\"$config\",\"metrics\":\"${metrics:-}\",\"result\":$result}" >>"$runs"
  done
done

echo "$name: criteo_reader on $rows rows..." >&2
run_bench 600 "$tmp/reader.json" "$reader" --rows "$rows" --repeats "$repeats" --dir "$tmp"

python3 - "$runs" "$tmp/reader.json" "$out" "$total" "$repeats" "$batch" "$rows" \
  "$load_before" <<'PY'
import json, os, statistics, sys

runs_path, reader_path, out, total, repeats, batch, rows, load_before = sys.argv[1:]
total, repeats, batch = int(total), int(repeats), int(batch)
runs = [json.loads(line) for line in open(runs_path)]
med = statistics.median

def by(config):
    return [r["result"] for r in runs if r["config"] == config]

def train_loss(run):
    """Mean training loss over a simulation's samples, from its train events."""
    events = [json.loads(line) for line in open(run["metrics"])]
    train = [e for e in events if e["event"] == "train"]
    return sum(e["loss"] * e["samples"] for e in train) / sum(e["samples"] for e in train)

plain = by("plain_loop")
result = {
    "bench": "ctr_throughput",
    "dataset": "criteo (actorps gen-data criteo)",
    "train_rows": int(rows),
    "model": plain[0]["model"],
    "batch": batch,
    "optimizer": plain[0]["optimizer"],
    "lr": plain[0]["lr"],
    "lr_schedule": plain[0]["lr_schedule"],
    "total_clocks": total,
    "samples_per_run": plain[0]["samples"],
    "workload": "same total samples for every W: total_clocks / W clocks per worker, 2 shards",
    "repeats": repeats,
    "hardware_threads": os.cpu_count(),
    "loadavg_1m_before": float(load_before),
    "plain_loop": {
        "steps": plain[0]["steps"],
        "samples_per_s": med([p["samples_per_s"] for p in plain]),
        "runs_samples_per_s": [p["samples_per_s"] for p in plain],
        "step_ms": med([p["step_ms"] for p in plain]),
        "split_ms": {k: med([p["split_ms"][k] for p in plain]) for k in plain[0]["split_ms"]},
        "mean_distinct_keys": plain[0]["mean_distinct_keys"],
        "mean_train_loss": plain[0]["mean_train_loss"],
    },
    "configs": {},
}
for name in ("w1_ssp", "w2_ssp", "w2_sync"):
    rs = by(name)
    result["configs"][name] = {
        "workers": rs[0]["workers"],
        "ps": rs[0]["shards"],
        "mode": rs[0]["mode"],
        "clocks_per_worker": rs[0]["clocks"],
        "samples_per_s": med([r["samples_per_s"] for r in rs]),
        "runs_samples_per_s": [r["samples_per_s"] for r in rs],
        "step_ms": 1e3 * med([r["wall_s"] / r["clocks"] for r in rs]),
        "runs_wall_s": [r["wall_s"] for r in rs],
        "final_test_auc": med([r.get("final_test_auc", -1) for r in rs]),
    }
c, base = result["configs"], result["plain_loop"]["samples_per_s"]
# The plain loop runs W=1's arithmetic: the same losses, clock by clock (rounding aside).
w1_loss = [train_loss(r) for r in runs if r["config"] == "w1_ssp"][0]
result["w1_mean_train_loss"] = w1_loss
result["w1_loss_matches_plain_loop"] = abs(w1_loss - plain[0]["mean_train_loss"]) <= 1e-9
result["overhead_ratio_w1"] = c["w1_ssp"]["samples_per_s"] / base
result["speedup_w2_vs_w1"] = c["w2_ssp"]["samples_per_s"] / c["w1_ssp"]["samples_per_s"]
result["speedup_w2_sync_vs_w1"] = c["w2_sync"]["samples_per_s"] / c["w1_ssp"]["samples_per_s"]
rd = json.load(open(reader_path))
result["reader"] = {
    "rows": rd["rows"],
    "plain_rows_per_s": rd["plain"]["one_part"]["rows_per_s"],
    "plain_two_parts_rows_per_s": rd["plain"]["two_parts"]["rows_per_s"],
    "gzip_rows_per_s": rd["gzip"]["one_part"]["rows_per_s"],
    "gzip_two_parts_rows_per_s": rd["gzip"]["two_parts"]["rows_per_s"],
    "detail": rd,
}
result["loadavg_1m_after"] = os.getloadavg()[0]
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")

print(f"DLRM {result['model']}, batch {batch}, {result['optimizer']} lr {result['lr']:g} "
      f"{result['lr_schedule']}, {total} minibatches per run, median of {repeats}, "
      f"{result['hardware_threads']} hardware threads, load {float(load_before):.1f} -> "
      f"{result['loadavg_1m_after']:.1f}")
p = result["plain_loop"]
print(f"  {'plain loop (1 thread)':24s} {p['samples_per_s']:10.0f} samples/s  "
      f"{p['step_ms']:6.2f} ms/step")
for name, cfg in c.items():
    label = f"simulate W={cfg['workers']} {cfg['mode']}, ps {cfg['ps']}"
    print(f"  {label:24s} {cfg['samples_per_s']:10.0f} samples/s  {cfg['step_ms']:6.2f} ms/clock"
          f"  auc {cfg['final_test_auc']:.4f}")
if not result["w1_loss_matches_plain_loop"]:
    print(f"  WARNING: W=1's mean training loss {w1_loss} is not the plain loop's "
          f"{p['mean_train_loss']}: they no longer run the same arithmetic")
print(f"  overhead ratio W=1 / plain loop: {result['overhead_ratio_w1']:.3f} (aim >= 0.9); "
      f"W=2 / W=1: {result['speedup_w2_vs_w1']:.2f} ssp, "
      f"{result['speedup_w2_sync_vs_w1']:.2f} sync")
print("  plain loop per step, ms: "
      + ", ".join(f"{k} {v:.3f}" for k, v in p["split_ms"].items()))
rr = result["reader"]
print(f"  criteo_reader ({rr['rows']} rows): plain {rr['plain_rows_per_s'] / 1e6:.2f} M rows/s "
      f"(two parts {rr['plain_two_parts_rows_per_s'] / 1e6:.2f}), gzip "
      f"{rr['gzip_rows_per_s'] / 1e6:.2f} M rows/s (two parts "
      f"{rr['gzip_two_parts_rows_per_s'] / 1e6:.2f})")
PY
echo "$name: wrote $out" >&2
