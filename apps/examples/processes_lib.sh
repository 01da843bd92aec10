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
  # Each port with the one after it free too: a ps task's data link listens on its port + 1,
  # and a port taken there by a test running beside this one would keep the ps from serving.
  cluster=$(python3 - "$@" <<'PY'
import json, socket, sys
jobs, socks = {}, []
for arg in sys.argv[1:]:
    job, n = arg.split(":")
    while len(jobs.get(job, [])) < int(n):
        s, t = socket.socket(), socket.socket()
        s.bind(("127.0.0.1", 0))
        try:
            t.bind(("127.0.0.1", s.getsockname()[1] + 1))
        except OSError:
            continue
        socks += [s, t]
        jobs.setdefault(job, []).append(f"127.0.0.1:{s.getsockname()[1]}")
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
