#!/usr/bin/env bash
# Example (b) as one process per task: 2 ps tasks and 4 worker tasks on 127.0.0.1, each started
# with its own TF_CONFIG. Every worker must report 0 wrong values and every task must exit 0.
# Usage: kv_loop_tasks.sh path/to/example_kv_loop
set -euo pipefail
bin=$1
dir=$(mktemp -d)
pids=()
# each pid is a `timeout` wrapper: its child, the task, goes first
trap 'for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do echo "--- $(basename "$f")" >&2; tail -n 20 "$f" >&2; done
  exit 1
}

cluster=$(python3 - <<'PY'
import json, socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
a = [f"127.0.0.1:{s.getsockname()[1]}" for s in socks]
print(json.dumps({"ps": a[:2], "worker": a[2:]}))
PY
)
start() {  # start TYPE INDEX
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$1\", \"index\": $2}}" \
    timeout 120 "$bin" >"$dir/$1$2.log" 2>&1 &
  pids+=($!)
}
# Workers first: they retry until the ps tasks listen.
for w in 0 1 2 3; do start worker $w; done
for p in 0 1; do start ps $p; done

status=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || status=$?; [ $status -eq 0 ] || fail "task $i exited $status"; done
for w in 0 1 2 3; do
  grep -q "^worker $w: 10 clocks, 1021 values, 0 wrong$" "$dir/worker$w.log" \
    || fail "worker $w did not see every value exact"
done
cat "$dir"/worker*.log
echo "PASS: 2 ps + 4 worker processes, every value exact"
