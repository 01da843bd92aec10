#!/usr/bin/env bash
# Usage: scripts/bench/criteo_reader.sh [-b BUILD_DIR] [-r ROWS] [OUT_FILE]
#
# How fast criteo_reader streams a generated Criteo-format file (ROWS rows, default 500000, from
# `actorps gen-data criteo`'s planted problem), plain and gzip, as one part and as two parts on
# two threads, each read 3 times (actorps_bench_criteo_reader; builds nothing). Writes its JSON
# object to OUT_FILE (default BUILD_DIR/bench/criteo_reader.json, BUILD_DIR default build) and
# prints rows/s per core and MB/s. Needs about 200 MB of temp space per 500000 rows; ~20 s per
# 500000 rows on 2 cores.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" rows=500000
while getopts "b:r:h" opt; do
  case "$opt" in
    b) build="$(realpath -m "$OPTARG")" ;;
    r) rows="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# <= 1 )) || usage
out="$(realpath -m "${1:-$build/bench/criteo_reader.json}")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bench="$build/actorps_bench_criteo_reader"
require_bench "$bench"
run_bench 600 "$out" "$bench" --rows "$rows" --repeats 3

python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['rows']} Criteo rows, {r['text_bytes'] / 1e6:.1f} MB of text, median of "
      f"{r['repeats']} reads, {r['hardware_threads']} hardware threads, "
      f"load {r['loadavg_1m_before']:.1f}:")
for kind in ("plain", "gzip"):
    k = r[kind]
    for parts in ("one_part", "two_parts"):
        p = k[parts]
        print(f"  {kind:5s} {k['file_bytes'] / 1e6:7.1f} MB file, {p['parts']} part(s)  "
              f"{p['rows_per_s_per_core'] / 1e6:6.2f} M rows/s per core  "
              f"{p['rows_per_s'] / 1e6:6.2f} M rows/s  {p['text_MBps']:7.1f} MB/s of text")
PY
echo "criteo_reader.sh: wrote $out" >&2
