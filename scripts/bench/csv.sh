#!/usr/bin/env bash
# Usage: scripts/bench/csv.sh [-b BUILD_DIR] [-r ROWS] [-c COLS] [OUT_FILE]
#
# How fast load_csv reads a generated CSV file (ROWS rows, default 200000, of a label and COLS
# features, default 20), plain and gzip-compressed, each read 3 times (actorps_bench_csv; builds
# nothing). Writes its JSON object to OUT_FILE (default BUILD_DIR/bench/csv.json, BUILD_DIR
# default build) and prints the rows/s and MB/s. Needs about 100 MB of temp space; ~10 s.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" rows=200000 cols=20
while getopts "b:r:c:h" opt; do
  case "$opt" in
    b) build="$(realpath -m "$OPTARG")" ;;
    r) rows="$OPTARG" ;;
    c) cols="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# <= 1 )) || usage
out="$(realpath -m "${1:-$build/bench/csv.json}")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bench="$build/actorps_bench_csv"
require_bench "$bench"
run_bench 300 "$out" "$bench" --rows "$rows" --cols "$cols" --repeats 3

python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['rows']} rows x {r['cols']} features, {r['text_bytes'] / 1e6:.1f} MB of text, "
      f"median of {r['repeats']} reads:")
for kind in ("plain", "gzip"):
    k = r[kind]
    print(f"  {kind:5s} {k['file_bytes'] / 1e6:7.1f} MB file  {k['rows_per_s'] / 1e6:6.2f} M rows/s  "
          f"{k['text_MBps']:7.1f} MB/s of text  {k['file_MBps']:7.1f} MB/s of file")
PY
echo "csv.sh: wrote $out" >&2
