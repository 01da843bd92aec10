#!/usr/bin/env bash
# `cmake --install` into a temporary prefix gives a working actorps, away from the source and
# build trees: the binary trains a short run (its metrics file ends with the final evaluation and
# the summary), the installed launch_local.sh finds the installed binary and trains a cluster,
# the Python package imports from the prefix, and the CUDA module is there when it was built.
# usage: tests/install_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
dir=$(mktemp -d /tmp/actorps-install.XXXXXX)
. "$(dirname "$0")/cluster_test_lib.sh"
prefix=$dir/prefix
unset ACTORPS_BINARY ACTORPS_CUDA_MODULE

cmake --install "$build" --prefix "$prefix" > "$dir/install.log" 2>&1 || fail "cmake --install failed"
[ -x "$prefix/bin/actorps" ] || fail "no $prefix/bin/actorps"
for f in launch_local.sh free_port_pairs.py make_certs.sh plot_metrics.py; do
  [ -x "$prefix/share/actorps/scripts/$f" ] || fail "no executable share/actorps/scripts/$f"
done
[ -f "$prefix/share/actorps/scripts/tfjob.yaml" ] || fail "no share/actorps/scripts/tfjob.yaml"
if [ -f "$build/libactorps_cuda.so" ]; then
  [ -f "$prefix/lib/actorps/libactorps_cuda.so" ] || fail "the CUDA module was built but not installed"
fi

cd "$dir"  # nothing of the source or build tree from here on
"$prefix/bin/actorps" simulate --dataset synthetic --model 784-32-10 --steps 60 --eval-every 20 \
  --no-progress --metrics "$dir/m.jsonl" > "$dir/run.log" 2>&1 || fail "the installed actorps failed"
"$python" - "$dir/m.jsonl" <<'PY' || fail "the installed actorps's metrics file: $(tail -2 "$dir/m.jsonl")"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
final = [e for e in events if e["event"] == "eval" and e["final"]]
assert len(final) == 1 and final[0]["clock"] == 60, final
assert events[-1]["event"] == "summary" and events[-1]["clocks"] == 60, events[-1]
assert final[0]["test_accuracy"] > 0.5, final[0]
PY

"$prefix/share/actorps/scripts/launch_local.sh" --insecure --ps 1 --workers 1 --connect-timeout 20 -- \
  --dataset synthetic --model 784-32-10 --steps 40 --no-progress --metrics "$dir/c.jsonl" \
  > "$dir/launch.log" 2>&1 || fail "the installed launch_local.sh failed"
grep -q '"event":"summary"' "$dir/c.jsonl" || fail "the installed launch_local.sh wrote no summary"

if [ -d "$build/python/actorps" ]; then
  site=$(find "$prefix/lib" -path '*/dist-packages/actorps/__init__.py' -printf '%h\n' | head -1)
  [ -n "$site" ] || fail "the Python package is not under $prefix/lib"
  where=$(PYTHONPATH=$(dirname "$site") /usr/bin/python3 -c "import actorps; print(actorps.__file__)") \
    || fail "import actorps from the prefix failed"
  case $where in "$prefix"/*) ;; *) fail "actorps imported from $where, not the prefix" ;; esac
fi
echo "PASS: installed into $prefix and trained from there"
