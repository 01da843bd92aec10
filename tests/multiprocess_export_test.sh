#!/usr/bin/env bash
# Export versions while training in a multi-process run (one process per task on 127.0.0.1):
# `actorps chief --export-every` asks the ps tasks for their state across the network and writes
# versions while the run goes on (a full one, then deltas), and the final one after it; predict
# on the directory serves its newest chain.
# usage: tests/multiprocess_export_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-mpx.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout 20)
cluster "$dir/c.json"
"$bin" gen-data criteo --out "$dir/criteo" --rows 6000 --test-rows 500 > /dev/null
for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
  "$bin" "${t%%:*}" --cluster "$dir/c.json" --task "$t" "${net[@]}" >> "$dir/$t.log" 2>&1 &
  pids+=($!)
done
set +e
"$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" --model dlrm:8:16:16 \
  --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv" --batch 64 \
  --steps 120 --mode sync --eval-every 0 --admit-after 1 --no-progress --export-dir "$dir/exp" \
  --export-every 10 --full-export-every 3 --metrics "$dir/m.jsonl" > "$dir/chief.log" 2>&1
status=$?
set -e
[ "$status" = 0 ] || fail "the chief exited $status"
versions=$(grep -c '"event":"export",' "$dir/m.jsonl" || true)
[ "$versions" -ge 1 ] || fail "no export version was written while training"
final=$(ls "$dir/exp" | sort -n | tail -1)
[ "$final" = $((versions + 1)) ] || fail "$versions versions while training, the final one is $final"
grep -q "exported to $dir/exp/$final " "$dir/chief.log" || fail "the final export is not $final"
"$bin" predict --model "$dir/exp" --input "$dir/criteo/test.tsv" > "$dir/root.pred"
"$bin" predict --model "$dir/exp/$final" --input "$dir/criteo/test.tsv" > "$dir/final.pred"
cmp "$dir/root.pred" "$dir/final.pred" || fail "predict on the directory is not its newest version"
echo "multi-process export: $versions versions while training, then $final"
