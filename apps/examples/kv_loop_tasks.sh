#!/usr/bin/env bash
# Example (b) as one process per task: 2 ps tasks and 4 worker tasks on 127.0.0.1, each started
# with its own TF_CONFIG. Every worker must report 0 wrong values and every task must exit 0.
# Usage: kv_loop_tasks.sh path/to/example_kv_loop
set -euo pipefail
bin=$1
. "$(dirname "$0")/processes_lib.sh"

free_cluster ps:2 worker:4
for w in 0 1 2 3; do start worker $w; done  # first: they retry until the ps tasks listen
for p in 0 1; do start ps $p; done
await_all
for w in 0 1 2 3; do
  grep -q "^worker $w: 10 clocks, 1021 values, 0 wrong$" "$dir/worker$w.log" \
    || fail "worker $w did not see every value exact"
done
cat "$dir"/worker*.log
echo "PASS: 2 ps + 4 worker processes, every value exact"
