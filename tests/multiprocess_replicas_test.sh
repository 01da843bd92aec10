#!/usr/bin/env bash
# Hot standbys with one process per task (--replicas 1) on 127.0.0.1: chief, 2 ps, 2 workers,
# sync mode. ps:0's standby runs in ps:1 and ps:1's in ps:0. The same run twice:
#  A. without faults: the exported model is the reference;
#  B. SIGKILL the ps:0 process once the chief's metrics show clock 150: ps:1 promotes shard 0's
#     standby, the workers re-send to it, and the run completes with a `failover` event, no
#     rollback, no checkpoint, and an exported model (model.capnp, model.onnx) byte-identical
#     to A's.
# The failover event's `ms` (detection to serving again) is printed. And --replicas 1 with a
# single ps task is refused with a usage error naming the flag.
# usage: tests/multiprocess_replicas_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mpr.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

net=(--heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout 20)
run=(--dataset synthetic --model 784-64-10 --steps 600 --mode sync --replicas 1
     --slow worker:0=2 --slow worker:1=2 --no-progress)
declare -A task_pid

cluster_without_evaluator() {  # FILE: chief, 2 ps, 2 workers on free ports
  "$python" - "$1" $("$python" "$free_port_pairs" 5) <<'PY'
import json, sys
a = [f"127.0.0.1:{p}" for p in sys.argv[2:]]
json.dump({"cluster": {"chief": a[:1], "ps": a[1:3], "worker": a[3:5]}}, open(sys.argv[1], "w"))
PY
}

start_run() {  # start_run NAME: every task of run NAME in the background; the chief's pid in $chief
  local name=$1
  cluster_without_evaluator "$dir/$name.json"
  for t in ps:0 ps:1 worker:0 worker:1; do
    "$bin" "${t%%:*}" --cluster "$dir/$name.json" --task "$t" "${net[@]}" >> "$dir/$name-$t.log" 2>&1 &
    task_pid[$t]=$!; pids+=($!)
  done
  : > "$dir/$name.jsonl"
  "$bin" chief --cluster "$dir/$name.json" --task chief:0 "${net[@]}" "${run[@]}" \
    --metrics "$dir/$name.jsonl" --export-dir "$dir/$name-model" > "$dir/$name-chief.log" 2>&1 &
  chief=$!; pids+=($chief)
}

finish_run() {  # finish_run NAME: the chief exits 0 with a summary of 600 clocks, no rollback
  local name=$1
  await_exit "$chief" 180
  [ "$status" = 0 ] || fail "run $name: the chief exited $status"
  summary=$(grep '"event":"summary"' "$dir/$name.jsonl") || fail "run $name: no summary"
  [ "$(summary_field "$summary" clocks)" = 600 ] || fail "run $name: clocks: $summary"
  # a rollback is a recovery that lost clocks; a fail-over loses none
  ! grep '"event":"recovery"' "$dir/$name.jsonl" | grep -v '"lost_clocks":0,' \
    || fail "run $name rolled back"
}

echo "== --replicas 1 with one ps task is refused, naming the flag"
echo '{"cluster":{"chief":["127.0.0.1:1"],"ps":["127.0.0.1:3"],"worker":["127.0.0.1:5"]}}' > "$dir/one.json"
set +e; out=$("$bin" chief --cluster "$dir/one.json" --task chief:0 "${run[@]}" 2>&1); s=$?; set -e
[ "$s" = 2 ] || fail "--replicas 1 with one ps task exited $s: $out"
grep -q -- "--replicas 1 needs at least 2 ps tasks" <<< "$out" || fail "no clear error: $out"

echo "== --replicas 1 with TLS is refused, naming both (the chief would have to relay)"
echo '{"cluster":{"chief":["127.0.0.1:1"],"ps":["127.0.0.1:3","127.0.0.1:7"],"worker":["127.0.0.1:5"]}}' > "$dir/two.json"
"$(dirname "$0")/../scripts/make_certs.sh" "$dir/certs" chief:0 > /dev/null
set +e
out=$("$bin" chief --cluster "$dir/two.json" --task chief:0 "${run[@]}" --tls-cert "$dir/certs/chief-0.pem" \
  --tls-key "$dir/certs/chief-0.key" --tls-ca "$dir/certs/ca.pem" 2>&1); s=$?
set -e
[ "$s" = 2 ] || fail "--replicas 1 with TLS exited $s: $out"
grep -q -- "--replicas 1 does not work with --tls-\* across processes" <<< "$out" || fail "no clear error: $out"

echo "== A. --replicas 1 without faults"
start_run a
await_event "$dir/a.jsonl" '"event":"summary"' 180
finish_run a
[ "$(summary_field "$summary" failovers)" = 0 ] || fail "run a: failovers: $summary"

echo "== B. SIGKILL the ps:0 process at clock 150"
start_run b
await_event "$dir/b.jsonl" '"event":"train".*"clock":15[0-9]' 120
kill -9 "${task_pid[ps:0]}"
await_event "$dir/b.jsonl" '"event":"failover","shard":0' 30
finish_run b
[ "$(summary_field "$summary" failovers)" = 1 ] || fail "run b: failovers: $summary"
failover=$(grep '"event":"failover"' "$dir/b.jsonl")
echo "failover: $failover"
echo "detection to serving again: $(summary_field "$failover" ms) ms"
grep -q '"event":"checkpoint"' "$dir/b.jsonl" && fail "run b wrote a checkpoint"

echo "== the exported models are byte-identical (metadata.json names the run and its time)"
a_sum=$(cd "$dir/a-model/1" && sha256sum model.capnp model.onnx) || fail "run a exported no model"
b_sum=$(cd "$dir/b-model/1" && sha256sum model.capnp model.onnx) || fail "run b exported no model"
[ "$a_sum" = "$b_sum" ] || fail "the models differ:
$a_sum
---
$b_sum"
for t in ps:1 worker:0 worker:1; do
  await_exit "${task_pid[$t]}" 15
  [ "$status" = 0 ] || fail "run b: $t exited $status"
done
echo PASS
