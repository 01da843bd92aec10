#!/usr/bin/env bash
# Usage: scripts/bench/dense_apply.sh [-b BUILD_DIR] [OUT_FILE [BINARY_FLAGS...]]
#
# What the value bounds cost a shard's dense update (actorps_bench_dense_apply; builds
# nothing): every optimizer over one shard of the default MLP (117 573 floats) and of
# 784-2048-2048-10 (2 925 578), the update as it was (all_finite + apply_update in place) and as
# it was (all_within --max-gradient + apply_update_checked into spare buffers) and as it is
# (apply_pushed_update: the gradient's bound checked inside the update's loop), alternating
# round by round in one window. Extra arguments after OUT_FILE go to the binary (--floats ...). Writes one JSON object to OUT_FILE (default
# BUILD_DIR/bench/dense_apply.json) and prints a table. ~20 s.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
while getopts "b:h" opt; do
  case "$opt" in
    b) build="$(realpath -m "$OPTARG")" ;;
    *) sed -n 2p "$0" | sed 's/^# //' >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
out="$(realpath -m "${1:-$build/bench/dense_apply.json}")"
bin="$build/actorps_bench_dense_apply"
[ -x "$bin" ] || { echo "$bin is missing: build the project first" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
shift || true
"$bin" "$@" > "$out.tmp" && mv "$out.tmp" "$out"
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'optimizer':10s} {'floats':>9s} {'unchecked ns/float':>19s} {'checked ns/float':>17s} "
      f"{'fused ns/float':>15s} {'fused/checked':>14s}")
for c in r["cases"]:
    print(f"{c['optimizer']:10s} {c['floats']:9d} {c['unchecked_ns_per_float']:19.3f} "
          f"{c['checked_ns_per_float']:17.3f} {c['fused_ns_per_float']:15.3f} "
          f"{c['fused_over_checked']:14.2f}")
PY
echo "wrote $out"
