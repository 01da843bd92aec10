#!/usr/bin/env bash
# A cluster started the way Kubeflow's TFJob starts one, on 127.0.0.1, one process per task:
#  1. every replica runs the same `actorps run` command with the TF_CONFIG the operator writes
#     (lower-case types, "master" for the chief, "environment": "cloud", the evaluator left out
#     of the cluster); one replica reads the cluster from --cluster FILE and its task from
#     TF_CONFIG. The evaluator outside the cluster joins and evaluates; every process exits 0.
# usage: tests/multiprocess_k8s_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-k8s.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

tfjob_config() {  # tfjob_config CLUSTER TYPE INDEX: TF_CONFIG as the TFJob operator writes it
  "$python" - "$1" "$2" "$3" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cluster"]
cluster = {"master": c["chief"], "ps": c["ps"], "worker": c["worker"]}  # no evaluator
print(json.dumps({"cluster": cluster, "task": {"type": sys.argv[2], "index": int(sys.argv[3])},
                  "environment": "cloud"}))
PY
}
# run_replica CLUSTER TYPE INDEX LOG FLAGS...: one replica, in the background (pid in $!)
run_replica() {
  local cluster=$1 type=$2 index=$3 log=$4; shift 4
  TF_CONFIG=$(tfjob_config "$cluster" "$type" "$index") "$bin" run "$@" > "$log" 2>&1 &
  pids+=($!)
}
await_exit() {  # await_exit PID SECONDS: sets $status to the process's exit status; fails when
  local waited    # it outlives SECONDS (not in $(...): only this shell can wait for its children)
  set +e; timeout "$2" tail --pid="$1" -f /dev/null; waited=$?; wait "$1"; status=$?; set -e
  [ "$waited" = 0 ] || fail "process $1 still running after $2 s"
}

echo "== 1. one command for every replica, TF_CONFIG as TFJob writes it"
cluster "$dir/c1.json"
flags=(--connect-timeout 20 --dataset synthetic --model 784-64-10 --steps 300 --no-progress
       --metrics "$dir/m1.jsonl")
run_replica "$dir/c1.json" master 0 "$dir/chief1.log" "${flags[@]}"; chief=$!
run_replica "$dir/c1.json" evaluator 0 "$dir/evaluator1.log" "${flags[@]}"; evaluator=$!
# The chief does not wait for an evaluator outside the cluster: let it join first.
await_event "$dir/chief1.log" "evaluator:0 joined"
others=()
run_replica "$dir/c1.json" ps 0 "$dir/ps0.log" "${flags[@]}"; others+=($!)
run_replica "$dir/c1.json" ps 1 "$dir/ps1.log" "${flags[@]}"; others+=($!)
run_replica "$dir/c1.json" worker 0 "$dir/worker0.log" "${flags[@]}"; others+=($!)
# --cluster FILE for the cluster, TF_CONFIG for the task
TF_CONFIG='{"task": {"type": "Worker", "index": 1}, "environment": "cloud"}' \
  "$bin" run --cluster "$dir/c1.json" "${flags[@]}" > "$dir/worker1.log" 2>&1 &
pids+=($!); others+=($!)
await_exit "$chief" 120; [ "$status" = 0 ] || fail "the chief exited $status"
for p in "$evaluator" "${others[@]}"; do
  await_exit "$p" 20; [ "$status" = 0 ] || fail "a replica exited $status after a clean run"
done
grep -q "outside the cluster, joined the chief" "$dir/evaluator1.log" || fail "evaluator: where is it?"
line=$(grep '"event":"summary"' "$dir/m1.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 300 ] || fail "clocks: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy (no evaluation?): $line"
grep -q '"event":"eval"' "$dir/m1.jsonl" || fail "the evaluator outside the cluster never evaluated"
no_listeners "$dir/c1.json"

echo PASS
