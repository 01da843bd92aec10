#!/usr/bin/env bash
# Usage: scripts/bench/libsvm.sh [-b BUILD_DIR] [-r ROWS] [-k NNZ] [OUT_FILE]
#
# How fast libsvm_reader streams a generated libsvm file (ROWS rows, default 500000, of NNZ
# features, default 20, from `actorps gen-data libsvm`'s planted problem), plain and gzip, as
# one part and as two parts on two threads, each read 3 times (actorps_bench_libsvm; builds
# nothing). Writes its JSON object to OUT_FILE (default BUILD_DIR/bench/libsvm.json, BUILD_DIR
# default build) and prints rows/s and MB/s. Needs about 130 MB of temp space per 500000 rows;
# ~15 s per 500000 rows on 2 cores.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" rows=500000 nnz=20
while getopts "b:r:k:h" opt; do
  case "$opt" in
    b) build="$(realpath -m "$OPTARG")" ;;
    r) rows="$OPTARG" ;;
    k) nnz="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# <= 1 )) || usage
out="$(realpath -m "${1:-$build/bench/libsvm.json}")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bench="$build/actorps_bench_libsvm"
require_bench "$bench"
run_bench 600 "$out" "$bench" --rows "$rows" --nnz "$nnz" --repeats 3

python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['rows']} rows x {r['nnz']} features, {r['text_bytes'] / 1e6:.1f} MB of text, "
      f"median of {r['repeats']} reads, {r['hardware_threads']} hardware threads, "
      f"load {r['loadavg_1m_before']:.1f}:")
for kind in ("plain", "gzip"):
    k = r[kind]
    for parts in ("one_part", "two_parts"):
        p = k[parts]
        print(f"  {kind:5s} {k['file_bytes'] / 1e6:7.1f} MB file, {p['parts']} part(s)  "
              f"{p['rows_per_s'] / 1e6:6.2f} M rows/s  {p['text_MBps']:7.1f} MB/s of text  "
              f"{p['file_MBps']:7.1f} MB/s of file")
PY
echo "libsvm.sh: wrote $out" >&2
