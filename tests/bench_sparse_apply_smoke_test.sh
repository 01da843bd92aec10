#!/usr/bin/env bash
# scripts/bench/sparse_apply.sh at small sizes, checked on what it wrote: 8 M rows × dim 1 (a
# slot array past the 32 MiB from which row_index maps it on its own, on 2 MiB pages) and
# 100 k rows × dim 16; every pass's rate, the read's floor and the bytes per row present and
# sane. Its figures mean nothing here (two tests may share the cores).
# usage: tests/bench_sparse_apply_smoke_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
big=$(mktemp /tmp/actorps-sparse-apply.XXXXXX.json)
wide=$(mktemp /tmp/actorps-sparse-apply.XXXXXX.json)
trap 'rm -f "$big" "$wide"' EXIT
"$root/scripts/bench/sparse_apply.sh" -b "$build" -s 8000000 -d 1 "$big" > /dev/null
"$root/scripts/bench/sparse_apply.sh" -b "$build" -s 100000 -d 16 "$wide" > /dev/null
python3 - "$big" "$wide" <<'PY'
import json, sys
for path, rows, dim, floats in ((sys.argv[1], 8000000, 1, 8), (sys.argv[2], 100000, 16, 128)):
    (c,) = json.load(open(path))["apply"]
    assert (c["rows"], c["dim"], c["float_bytes_per_row"]) == (rows, dim, floats), c
    for k in ("create", "update", "read", "read_floor"):
        assert c[k + "_rows_per_cpu_s"] > 0, (k, c)
    assert 0 < c["read_over_floor"] < 10, c
    # 16 bytes of metadata in the row, 4.6-7.3 in the index, the last page's slack
    assert 16 < c["overhead_bytes_per_row"] < 32, c
print("sparse apply smoke: ok")
PY
