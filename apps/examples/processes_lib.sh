# Shell helpers for the examples that run one process per task on 127.0.0.1 (sourced, not run).
# Expects $bin (the example program). Gives: $dir (scratch), start TYPE INDEX (a task with its own
# TF_CONFIG over $cluster, its output in $dir/TYPEINDEX.log), free_cluster JOB:N... (sets $cluster
# to fresh free ports), await_all (every started task exits 0), fail MESSAGE.
dir=$(mktemp -d)
pids=()
# each pid is a `timeout` wrapper: its child, the task, goes first
trap 'for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
fail() {  # with every task's log, so that a failure in CI explains itself
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do echo "--- $(basename "$f")" >&2; tail -n 20 "$f" >&2; done
  exit 1
}
free_cluster() {  # free_cluster ps:2 worker:4 ...
  # Ports whose next port is free too (scripts/free_port_pairs.py): a ps task's data link
  # listens on its port + 1, and one taken there by a test running beside this one would keep
  # the ps from serving.
  local root arg total=0
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  for arg; do total=$((total + ${arg#*:})); done
  cluster=$(python3 - "$*" $(python3 "$root/scripts/free_port_pairs.py" "$total") <<'PY'
import json, sys
ports, jobs = iter(sys.argv[2:]), {}
for job, n in (arg.split(":") for arg in sys.argv[1].split()):
    jobs[job] = [f"127.0.0.1:{next(ports)}" for _ in range(int(n))]
print(json.dumps(jobs))
PY
)
}
start() {  # start TYPE INDEX
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$1\", \"index\": $2}}" \
    timeout 120 "$bin" >"$dir/$1$2.log" 2>&1 &
  pids+=($!)
}
await_all() {
  local i status
  for i in "${!pids[@]}"; do
    status=0; wait "${pids[$i]}" || status=$?
    [ $status -eq 0 ] || fail "task $i exited $status"
  done
}
