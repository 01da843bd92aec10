#!/usr/bin/env bash
# Example (c) as a cluster on 127.0.0.1: chief, 2 ps, 2 workers and an evaluator, each process
# started with its own TF_CONFIG. The chief must reach its accuracy and every task must exit 0.
# Usage: cluster_task.sh path/to/example_cluster_task
set -euo pipefail
bin=$1
. "$(dirname "$0")/processes_lib.sh"

free_cluster chief:1 ps:2 worker:2 evaluator:1
start chief 0
for t in "ps 0" "ps 1" "worker 0" "worker 1" "evaluator 0"; do start $t; done
await_all
grep -E "^chief: 2 workers, 2 shards, 150 clocks, 9600 samples, test accuracy" "$dir/chief0.log" \
  || fail "the chief's summary is not the expected run"
echo "PASS: chief, 2 ps, 2 workers and an evaluator as processes"
