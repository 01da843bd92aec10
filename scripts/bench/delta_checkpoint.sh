#!/usr/bin/env bash
# Usage: scripts/bench/delta_checkpoint.sh [-o FILE] [-b BUILD_DIR] [-n CTR_ROWS] [-c CLOCKS] [-a ADMIT_AFTER] [-t TABLE_ROWS] [-s TOUCH]
#
# What delta checkpoints cost against full ones (--full-checkpoint-every), in two parts:
#
# 1. The README's CTR example: `actorps simulate --model dlrm` on `actorps gen-data criteo`
#    (CTR_ROWS training rows, default 200000; 2 shards, 2 workers, sync) for CLOCKS clocks
#    (default 200), checkpointing every 10 clocks with --full-checkpoint-every 10. Per checkpoint:
#    its kind, bytes on disk and time (the run's own checkpoint events: asked to committed), the rows its
#    shard files hold against the rows of the state it restores (the share of rows touched since
#    the previous checkpoint; actorps_bench_delta_checkpoint --inspect). The same run with every
#    checkpoint full (--full-checkpoint-every 1) for comparison. -a N passes --admit-after N
#    (default: the model's, 20; 1 gives every key seen a row, as ctr_throughput.sh does).
# 2. A TABLE_ROWS-row sparse table (default 10 M, dim 8, Adagrad) on one shard:
#    actorps_bench_delta_checkpoint writes one full checkpoint, then 10 deltas with a TOUCH share
#    (default 0.05) of its rows pushed between two, then the last clock whole; and times the
#    restore of the chain of 10 (every file verified, folded), checked byte for byte against it.
#    A checkpoint's time is split: the rows copied out of the table (a delta: cut from them, a
#    pass over every row), encoding, and the disk (write, fsync, run.capnp, manifest).
#
# The JSON (default BUILD_DIR/bench/delta_checkpoint.json) holds every checkpoint, the medians
# and median_checkpoint_over_full (the median checkpoint's bytes / a full one's). About 2 min at
# the defaults on 2 cores (3 GB of memory for the 10 M rows); `-n 4000 -c 40 -t 20000` takes
# seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" ctr_rows=200000 clocks=200 table_rows=10000000 touch=0.05 admit=()
while getopts "o:b:n:c:a:t:s:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) ctr_rows="$OPTARG" ;;
    c) clocks="$OPTARG" ;;
    a) admit=(--admit-after "$OPTARG") ;;
    t) table_rows="$OPTARG" ;;
    s) touch="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/delta_checkpoint.json}")"
if ! [[ "$ctr_rows" =~ ^[0-9]+$ && "$clocks" =~ ^[0-9]+$ && "$table_rows" =~ ^[0-9]+$ ]] \
   || (( ctr_rows < 1000 || clocks < 20 || table_rows < 1 )); then
  echo "delta_checkpoint.sh: -n must be 1000 or more, -c 20 or more, -t positive" >&2
  exit 2
fi

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps" bench="$build/actorps_bench_delta_checkpoint"
for exe in "$sim" "$bench"; do require_bench "$exe"; done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
data="$tmp/criteo"
echo "$name: generating $ctr_rows CTR training rows..." >&2
"$sim" gen-data criteo --out "$data" --rows "$ctr_rows" --test-rows 1000 >/dev/null

for full_every in 10 1; do
  echo "$name: CTR example, $clocks clocks, a checkpoint every 10, full every $full_every" >&2
  ck="$tmp/ckpt-$full_every"
  if ! timeout 900 "$sim" simulate --no-progress --model dlrm \
         --dataset "criteo:$data/train.tsv" --test "$data/test.tsv" --workers 2 --ps 2 \
         --mode sync --steps "$clocks" --eval-every 0 --checkpoint-dir "$ck" \
         --checkpoint-every 10 --full-checkpoint-every "$full_every" --keep 100000 "${admit[@]}" \
         --metrics "$tmp/metrics-$full_every.jsonl" >/dev/null; then
    echo "$name: the CTR run (full every $full_every) failed or took over 900 s" >&2
    exit 1
  fi
  run_bench 600 "$tmp/inspect-$full_every.json" "$bench" --inspect "$ck"
done

echo "$name: a $table_rows-row table, $touch of its rows touched between checkpoints..." >&2
run_bench 900 "$tmp/table.json" "$bench" --rows "$table_rows" --touch "$touch" --deltas 10

python3 - "$tmp" "$out" "$ctr_rows" "$clocks" "${admit[*]:-}" <<'PY'
import json, statistics, sys

tmp, out, ctr_rows, clocks, admit = sys.argv[1:]
med = statistics.median

def ctr(full_every):
    events = [json.loads(l) for l in open(f"{tmp}/metrics-{full_every}.jsonl")]
    written = {e["clock"]: e for e in events if e["event"] == "checkpoint"}
    inspected = json.load(open(f"{tmp}/inspect-{full_every}.json"))["checkpoints"]
    rows = []
    for c in inspected:
        e = written.get(c["clock"], {})
        rows.append({"clock": c["clock"], "kind": c["kind"], "bytes": c["bytes"],
                     "write_ms": e.get("ms"), "rows": c["rows"], "state_rows": c["state_rows"],
                     "row_share": c["row_share"]})
    return rows

chained, whole = ctr(10), ctr(1)
full_bytes = med([c["bytes"] for c in whole])
deltas = [c for c in chained if c["kind"] == "delta"]
fulls = [c for c in chained if c["kind"] == "full"]
table = json.load(open(f"{tmp}/table.json"))
tdeltas = [c for c in table["checkpoints"] if c["kind"] == "delta"]
result = {
    "bench": "delta_checkpoint",
    "ctr_example": {
        "run": "simulate --model dlrm, criteo (gen-data), 2 workers, 2 shards, sync, "
               "--checkpoint-every 10 --full-checkpoint-every 10 " + admit,
        "train_rows": int(ctr_rows), "clocks": int(clocks),
        "median_full_bytes": full_bytes,
        "median_checkpoint_bytes": med([c["bytes"] for c in chained]),
        "median_checkpoint_over_full": med([c["bytes"] for c in chained]) / full_bytes,
        "median_delta_bytes": med([c["bytes"] for c in deltas]) if deltas else None,
        "median_delta_row_share": med([c["row_share"] for c in deltas]) if deltas else None,
        "median_delta_write_ms": med([c["write_ms"] for c in deltas if c["write_ms"] is not None]) if deltas else None,
        "median_full_write_ms": med([c["write_ms"] for c in whole if c["write_ms"] is not None]),
        "checkpoints": chained,
        "all_full_checkpoints": whole,
    },
    "sparse_table": {
        "rows": table["rows"], "dim": table["dim"], "touch_share": table["touch_share"],
        "full_bytes": table["checkpoints"][0]["bytes"],
        "full_write_ms": table["checkpoints"][0]["write_ms"],
        "median_delta_bytes": med([c["bytes"] for c in tdeltas]),
        "median_delta_write_ms": med([c["write_ms"] for c in tdeltas]),
        "full_parts_ms": {k: table["checkpoints"][0][k] for k in ("export_ms", "encode_ms", "disk_ms")},
        "median_delta_parts_ms": {k: med([c[k] for c in tdeltas]) for k in ("export_ms", "encode_ms", "disk_ms")},
        "median_delta_row_share": med([c["rows"] / table["rows"] for c in tdeltas]),
        "median_checkpoint_over_full": table["median_checkpoint_over_full"],
        "restore_chain_of_10_ms": table["restore_chain_ms"],
        "restore_full_ms": table["restore_full_ms"],
        "restored_identical": table["restored_identical"],
        "checkpoints": table["checkpoints"],
        "full_at_last_clock": table["full_at_last_clock"],
    },
}
json.dump(result, open(out, "w"), indent=2)
c, t = result["ctr_example"], result["sparse_table"]
print(f"CTR: median checkpoint {c['median_checkpoint_bytes']:.0f} B = "
      f"{c['median_checkpoint_over_full']:.2f} of a full one ({full_bytes:.0f} B); deltas carry "
      f"{c['median_delta_row_share']} of the rows")
print(f"{t['rows']}-row table: full {t['full_bytes']} B in {t['full_write_ms']:.0f} ms, delta "
      f"{t['median_delta_bytes']:.0f} B in {t['median_delta_write_ms']:.0f} ms "
      f"({t['median_delta_row_share']:.3f} of the rows; disk {t['median_delta_parts_ms']['disk_ms']:.0f} ms "
      f"against {t['full_parts_ms']['disk_ms']:.0f}); chain of 10 restored in "
      f"{t['restore_chain_of_10_ms']:.0f} ms (full: {t['restore_full_ms']:.0f} ms), identical: "
      f"{t['restored_identical']}")
print(f"wrote {out}")
PY
