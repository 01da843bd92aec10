#!/usr/bin/env bash
# Usage: scripts/bench/delta_export.sh [-o FILE] [-b BUILD_DIR] [-n CTR_ROWS] [-c CLOCKS] [-e EVERY] [-a ADMIT_AFTER] [-t TABLE_ROWS] [-s SHARES]
#
# What delta export versions cost against full ones (--export-every, --full-export-every), on the
# README's CTR example: `actorps simulate --model dlrm` on `actorps gen-data criteo` (CTR_ROWS
# training rows, default 200000; 2 shards, 2 workers, sync) for CLOCKS clocks (default 200), an
# export version every EVERY clocks (default 10) while training:
#   chained  --full-export-every 10: a full version, then 9 deltas;
#   full     --full-export-every 1: every version full.
# Per version (the run's own export events): its kind, bytes (every file of the version) and write
# time (the writer's: the shards' states gathered into a model, a full one evaluated on the test
# split, encoded, written, fsynced, published), the rows the shards sent for it, and a delta's
# rows against the table's at that clock (the share of rows changed since the version before).
# The chain's newest delta at a clock the full run has, folded (export --consolidate), is checked
# byte for byte against that version. -a N passes --admit-after N (default: the model's, 20).
#
# Then a large table: actorps_bench_delta_export fills a TABLE_ROWS-row DLRM table (default 2 M,
# dim 16) and, for each share in SHARES (default 0.001,0.01,0.05,0.2) of its rows pushed, writes
# one delta version as runs do (the shard sends the rows pushed since) and as they did before (the
# shard sends every row, the writer compares each with the previous version's): the shard's time,
# the writer's, the rows sent, the bytes.
#
# The JSON (default BUILD_DIR/bench/delta_export.json) holds every version, the medians and
# "large_table". About 3 min at the defaults on 2 cores (1.5 GB of memory for the 2 M rows);
# `-n 4000 -c 40 -t 20000` takes seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" ctr_rows=200000 clocks=200 every=10 admit=()
table_rows=2000000 shares=0.001,0.01,0.05,0.2
while getopts "o:b:n:c:e:a:t:s:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) ctr_rows="$OPTARG" ;;
    c) clocks="$OPTARG" ;;
    e) every="$OPTARG" ;;
    a) admit=(--admit-after "$OPTARG") ;;
    t) table_rows="$OPTARG" ;;
    s) shares="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/delta_export.json}")"
if ! [[ "$ctr_rows" =~ ^[0-9]+$ && "$clocks" =~ ^[0-9]+$ && "$every" =~ ^[0-9]+$ ]] \
   || ! [[ "$table_rows" =~ ^[0-9]+$ ]] || (( table_rows < 1000 )) \
   || (( ctr_rows < 1000 || every < 1 || clocks < 3 * every )); then
  echo "delta_export.sh: -n and -t must be 1000 or more, -e positive, -c at least 3 times -e" >&2
  exit 2
fi

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps"
require_bench "$sim"
require_bench "$build/actorps_bench_delta_export"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
data="$tmp/criteo"
echo "$name: generating $ctr_rows CTR training rows..." >&2
"$sim" gen-data criteo --out "$data" --rows "$ctr_rows" --test-rows 1000 >/dev/null

for full_every in 10 1; do
  echo "$name: CTR example, $clocks clocks, a version every $every, full every $full_every" >&2
  if ! timeout 900 "$sim" simulate --no-progress --model dlrm \
         --dataset "criteo:$data/train.tsv" --test "$data/test.tsv" --workers 2 --ps 2 \
         --mode sync --steps "$clocks" --eval-every 0 --export-dir "$tmp/export-$full_every" \
         --export-every "$every" --full-export-every "$full_every" "${admit[@]}" \
         --metrics "$tmp/metrics-$full_every.jsonl" >/dev/null; then
    echo "$name: the CTR run (full every $full_every) failed or took over 900 s" >&2
    exit 1
  fi
done

# The chain's newest delta whose clock the full run has a version of (a version may be skipped),
# folded, against that version.
newest=$(python3 - "$tmp/export-10" "$tmp/export-1" <<'PY'
import json, os, sys
def chains(root):
    return {int(v): json.load(open(f"{root}/{v}/metadata.json")).get("chain", {})
            for v in os.listdir(root) if v.isdigit()}
full_clocks = {c.get("clock") for c in chains(sys.argv[2]).values()}
deltas = [v for v, c in chains(sys.argv[1]).items()
          if c.get("kind") == "delta" and c.get("clock") in full_clocks]
print(max(deltas) if deltas else "")
PY
)
[ -n "$newest" ] || { echo "$name: no delta version at a clock the full run has" >&2; exit 1; }
"$sim" export --consolidate "$tmp/export-10/$newest" --export-dir "$tmp/folded" >/dev/null

echo "$name: a $table_rows-row table, delta versions after pushing shares $shares of its rows" >&2
"$build/actorps_bench_delta_export" --rows "$table_rows" --touch "$shares" > "$tmp/large.json" \
  || { echo "$name: actorps_bench_delta_export failed" >&2; exit 1; }

python3 - "$tmp" "$out" "$ctr_rows" "$clocks" "$every" "${admit[*]:-}" "$newest" <<'PY'
import filecmp, json, os, statistics, sys

tmp, out, ctr_rows, clocks, every, admit, newest = sys.argv[1:]
med = statistics.median

def versions(full_every):
    root = f"{tmp}/export-{full_every}"
    events = [json.loads(l) for l in open(f"{tmp}/metrics-{full_every}.jsonl")]
    written = {e["version"]: e for e in events if e["event"] == "export"}
    skipped = [e["clock"] for e in events if e["event"] == "export_skipped"]
    rows = []
    for v, e in sorted(written.items()):
        meta = json.load(open(f"{root}/{v}/metadata.json"))
        row = {"version": v, "clock": e["clock"], "kind": e["kind"], "bytes": e["bytes"],
               "write_ms": e["ms"], "rows_sent": e["rows"]}
        if e["kind"] == "delta":
            row["rows"] = meta["delta"]["rows"]
            row["removed_keys"] = meta["delta"]["removed_keys"]
        else:
            row["rows"] = meta["model"]["table"]["rows"]
        rows.append(row)
    return rows, skipped

chained, chained_skipped = versions(10)
whole, whole_skipped = versions(1)
table_rows = {v["clock"]: v["rows"] for v in whole}
for v in chained:
    if v["kind"] == "delta" and v["clock"] in table_rows:
        v["row_share"] = v["rows"] / table_rows[v["clock"]]
deltas = [v for v in chained if v["kind"] == "delta"]
fulls = [v for v in chained if v["kind"] == "full"] + whole
newest_clock = next(v["clock"] for v in chained if v["version"] == int(newest))
twin = next((v for v in whole if v["clock"] == newest_clock), None)
identical = twin is not None and filecmp.cmp(
    f"{tmp}/folded/1/model.capnp", f"{tmp}/export-1/{twin['version']}/model.capnp", shallow=False)
shares = [v["row_share"] for v in deltas if "row_share" in v]
result = {
    "bench": "delta_export",
    "run": "simulate --model dlrm, criteo (gen-data), 2 workers, 2 shards, sync, --export-every "
           + every + " " + admit,
    "train_rows": int(ctr_rows), "clocks": int(clocks), "every": int(every),
    "median_full_bytes": med([v["bytes"] for v in fulls]),
    "median_full_write_ms": med([v["write_ms"] for v in fulls]),
    "median_delta_bytes": med([v["bytes"] for v in deltas]),
    "median_delta_write_ms": med([v["write_ms"] for v in deltas]),
    "median_delta_over_full_bytes": med([v["bytes"] for v in deltas]) / med([v["bytes"] for v in fulls]),
    "median_delta_row_share": med(shares) if shares else None,
    "median_version_over_full_bytes": med([v["bytes"] for v in chained]) / med([v["bytes"] for v in whole]),
    "newest_delta_folded_identical_to_full": identical,
    # the versions the schedule holds (every EVERY clocks before the last), those written, and
    # those asked but skipped (the shards past them): the rest passed unasked
    "versions_due": len(range(int(every), int(clocks), int(every))),
    "versions_written": {"chained": len(chained), "full": len(whole)},
    "versions_skipped": {"chained": chained_skipped, "full": whole_skipped},
    "chained_versions": chained,
    "all_full_versions": whole,
    "large_table": json.load(open(f"{tmp}/large.json")),
}
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=2)
r = result
print(f"full version: {r['median_full_bytes']:.0f} B in {r['median_full_write_ms']:.0f} ms; delta: "
      f"{r['median_delta_bytes']:.0f} B ({r['median_delta_over_full_bytes']:.2f} of a full one) in "
      f"{r['median_delta_write_ms']:.0f} ms, {r['median_delta_row_share']} of the rows; folded "
      f"chain identical to a full version: {identical}")
print(f"versions written of {r['versions_due']} due: {len(chained)} chained "
      f"({len(chained_skipped)} skipped), {len(whole)} all full ({len(whole_skipped)} skipped)")
for v in r["large_table"]["versions"]:
    c, o = v["changed"], v["compared"]
    print(f"{r['large_table']['rows']} rows, {v['rows_pushed']} pushed: delta {c['version_bytes']} B; "
          f"shard {c['shard_ms']:.0f} ms + writer {c['writer_ms']:.0f} ms "
          f"(whole state compared: {o['shard_ms']:.0f} + {o['writer_ms']:.0f} ms)")
print(f"wrote {out}")
if not identical:
    sys.exit("the chain folded differs from the full version at its clock")
PY
