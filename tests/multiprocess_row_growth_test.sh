#!/usr/bin/env bash
# --max-rows-per-shard with a spare ps task (one process per task on 127.0.0.1, mutual TLS): a
# 2-ps sync run of a sparse model whose tables reach the bound, a third ps task started with a
# cluster spec that lists it (it joins as a spare). At the next evaluation's table figures the
# chief grows the run onto it by itself (no scale request): one resize event 2 -> 3, its log
# naming the shard and table near the bound; the run finishes every clock, every task exits 0.
# The run never given a spare evicts instead and keeps 2 shards.
# usage: tests/multiprocess_row_growth_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/actorps}")
dir=$(mktemp -d /tmp/actorps-row-growth.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

scale_clusters 1 0  # c.json; grown.json adds ps:2; certificates; $net
"$bin" gen-data criteo --out "$dir/criteo" --rows 6000 --test-rows 400 > /dev/null
train=(--model lr --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv"
       --mode sync --batch 32 --steps 160 --eval-every 10 --max-rows-per-shard 400 --seed 5
       --no-progress)

echo "== no spare: the shards evict at the bound and stay 2"
start_job alone
all_exit_0 alone ps:0 ps:1 worker:0 worker:1
grep -q '"event":"resize"' "$dir/alone.jsonl" && fail "a run without a spare resized"
line=$(grep '"event":"summary"' "$dir/alone.jsonl") || fail "no summary event"
evicted=$("$python" -c "import json,sys; print(sum(json.loads(sys.argv[1])['rows_evicted']))" "$line")
[ "$evicted" -gt 0 ] || fail "nothing evicted at the bound: $line"

echo "== a spare ps:2 waiting: the chief grows onto it"
start_job grown --slow worker:0=30
start_spare_ps grown
await_event "$dir/grown.jsonl" '"event":"resize","from":2,"to":3' 120
grep -q "near its bound of 400 per shard: growing onto the spare ps:2" "$dir/grown-chief.log" \
  || fail "the chief did not say why it grew"
all_exit_0 grown ps:0 ps:1 ps:2 worker:0 worker:1
[ "$(grep -c '"event":"resize"' "$dir/grown.jsonl")" = 1 ] || fail "not one resize event"
line=$(grep '"event":"summary"' "$dir/grown.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 160 ] || fail "clocks: $line"
no_listeners "$dir/grown.json"
echo "row growth: a shard near --max-rows-per-shard grew the run onto the spare ps:2"
