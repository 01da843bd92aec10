#!/usr/bin/env bash
# Every task of a cluster on one host runs under `ulimit -v` (what a container or a shared
# login node may impose): the shared-memory data links' arenas hold address space in proportion
# to the buffers in them (actors/protocol/link_memory.hpp, actors/link/peer_arena.hpp), not their
# 16 GiB virtual size per process and per peer (a ps once held 81 GiB, and any limit below that
# broke it). Pushes and replies still travel by shared memory, and the run ends as it should.
# usage: tests/multiprocess_address_space_test.sh [path/to/actorps] [limit in KiB]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
limit_kib=${2:-8388608}  # 8 GiB: an arena and a peer's would each take 16
dir=$(mktemp -d /tmp/actorps-as.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

echo "== 2 ps, 2 workers and the evaluator on shared memory, every task under ulimit -v $limit_kib"
(
  ulimit -v "$limit_kib"
  ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 --connect-timeout 30 \
    --data-link shm --keep-cluster "$dir/c.json" -- \
    --dataset synthetic --model 784-256-10 --steps 200 --no-progress --metrics "$dir/m.jsonl"
) > "$dir/launch.log" 2>&1 || fail "the cluster failed under ulimit -v $limit_kib: $(tail -n 30 "$dir/launch.log")"
for task in worker:0 worker:1 evaluator:0; do
  grep -q "^$task | .*connected to 2 shard(s) (data links: shared memory, shared memory)" "$dir/launch.log" \
    || fail "$task did not use shared memory data links: $(grep "^$task | " "$dir/launch.log" | head -5)"
done
grep -q "no arena for pushes by reference" "$dir/launch.log" && fail "a task made no arena"
line=$(grep '"event":"summary"' "$dir/m.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 200 ] || fail "clocks: $line"
[ "$(summary_field "$line" dropped_messages)" = 0 ] || fail "dropped: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.8 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy: $line"
no_listeners "$dir/c.json"
echo "PASS"
