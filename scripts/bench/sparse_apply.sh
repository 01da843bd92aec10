#!/usr/bin/env bash
# Usage: scripts/bench/sparse_apply.sh [-b BUILD_DIR] [-s SIZES] [-d DIMS] [-r] [OUT_FILE]
#
# One shard's sparse_table alone (actorps_bench_sparse_apply; builds nothing): Adagrad rows
# created by a first pass of pushes, updated by a second, then read, for each of DIMS (default
# 1,16) × SIZES (default 1000000,10000000 rows); rows/s, the read's floor on this machine
# (random_access_floor.hpp: no table of rows apart from their index reads faster here; it
# holds a second table's worth of rows, so 10 M rows × dim 16 peak near 3 GB) and bytes per
# row. With -r, also the peak resident set of 2 shards grown to 20 M rows × dim 16 in a process
# of its own (needs about 3 GB of memory). Writes one JSON object to OUT_FILE (default
# BUILD_DIR/bench/sparse_apply.json, BUILD_DIR default build) and prints a table. ~1 min; -r
# adds ~1 min.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" sizes=1000000,10000000 dims=1,16 peak_rss=0
while getopts "b:s:d:rh" opt; do
  case "$opt" in
    b) build="$(realpath -m "$OPTARG")" ;;
    s) sizes="$OPTARG" ;;
    d) dims="$OPTARG" ;;
    r) peak_rss=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# <= 1 )) || usage
out="$(realpath -m "${1:-$build/bench/sparse_apply.json}")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bench="$build/actorps_bench_sparse_apply"
require_bench "$bench"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
apply_json="$tmp/apply.json" rss_json="$tmp/rss.json"
: >"$rss_json"
run_bench 600 "$apply_json" "$bench" --sizes "$sizes" --dims "$dims"
# The peak resident set is the whole process's: measured in a process that does nothing else.
if (( peak_rss )); then run_bench 600 "$rss_json" "$bench" --peak-rss; fi

python3 - "$apply_json" "$rss_json" "$out" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
if os.path.getsize(sys.argv[2]):
    r["peak_rss"] = json.load(open(sys.argv[2]))["peak_rss"]
json.dump(r, open(sys.argv[3], "w"), indent=1)
print(f"sparse_table, {r['optimizer']}, {r['batch']} unique keys a push; rows/s in millions "
      f"(floor: the read's least on this machine, in CPU time), bytes/row (load average "
      f"{r['loadavg_1m_before']:.1f} before, {r['loadavg_1m_after']:.1f} after)")
print(f"{'dim':>4s} {'rows':>10s} {'create':>8s} {'update':>8s} {'read':>8s} {'floor':>8s} "
      f"{'bytes':>7s} {'malloc':>7s} {'floats':>7s} {'extra':>6s}")
for c in r["apply"]:
    print(f"{c['dim']:4d} {c['rows']:10d} {c['create_rows_per_s'] / 1e6:8.2f} "
          f"{c['update_rows_per_s'] / 1e6:8.2f} {c['read_rows_per_s'] / 1e6:8.2f} "
          f"{c['read_floor_rows_per_cpu_s'] / 1e6:8.2f} "
          f"{c['bytes_per_row']:7.1f} {c['malloc_bytes_per_row']:7.1f} "
          f"{c['float_bytes_per_row']:7.1f} {c['overhead_bytes_per_row']:6.1f}")
if "peak_rss" in r:
    p = r["peak_rss"]
    print(f"peak RSS, {p['shards']} shards, {p['rows']} rows x dim {p['dim']}: "
          f"{p['peak_rss_bytes'] / 2**30:.2f} GiB ({p['peak_rss_bytes_per_row']:.1f} B/row; "
          f"memory_bytes {p['memory_bytes_per_row']:.1f} B/row; floats "
          f"{p['float_bytes'] / p['rows']:.0f} B/row), grown in {p['grow_s']:.1f} s")
PY
echo "sparse_apply.sh: wrote $out" >&2
