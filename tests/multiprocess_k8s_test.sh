#!/usr/bin/env bash
# A cluster started the way Kubeflow's TFJob starts one, on 127.0.0.1, one process per task:
#  1. every replica runs the same `actorps run` command with the TF_CONFIG the operator writes
#     (lower-case types, "master" for the chief, "environment": "cloud", the evaluator left out
#     of the cluster); one replica reads the cluster from --cluster FILE and its task from
#     TF_CONFIG. The evaluator outside the cluster joins and evaluates; every process exits 0.
#  2. SIGTERM to the chief mid-run: it logs it, trains on to the next checkpoint clock, writes
#     that checkpoint, prints the summary and stops every task; the chief exits 143, every
#     other task 138 (retryable: TFJob restarts them with the chief).
#  3. SIGTERM to a worker: it tells the chief, which logs a leave (not a lost link), and exits
#     143. SIGINT to the chief without checkpoints: it stops at once with its summary and exits
#     130, the other tasks 138.
#  4. SIGKILL on the chief: every other task exits 138 (retryable) after the peer timeout.
#  5. --bind 0.0.0.0: every task listens on all interfaces while peers dial the spec's names;
#     a ps task's data link listens on --data-port, or on its own port + 1 by default, and
#     answers there on every interface.
#  6. SIGTERM to every process at once (`kubectl delete`, a drained node): every task leaves
#     with 143, also one that the chief's stop or a lost shard ended before its signal thread
#     ran, and the chief, whose clean stop fails with them, still exits 143 (retryable) at
#     once, not 1 after waiting for tasks that are gone.
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
  TF_CONFIG=$(tfjob_config "$cluster" "$type" "$index") "$bin" run --insecure "$@" > "$log" 2>&1 &
  pids+=($!)
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
  "$bin" run --insecure --cluster "$dir/c1.json" "${flags[@]}" > "$dir/worker1.log" 2>&1 &
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

start_replicas() {  # start_replicas CLUSTER TAG FLAGS...: every replica; chief pid in $chief
  local cluster=$1 tag=$2; shift 2
  task_pids=(); task_names=()
  run_replica "$cluster" master 0 "$dir/chief$tag.log" "$@"; chief=$!
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    run_replica "$cluster" "${t%%:*}" "${t##*:}" "$dir/$t.$tag.log" "$@"; task_pids+=($!)
    task_names+=("$t")
  done
}
tasks_exit() {  # tasks_exit CODE SECONDS: every task of start_replicas exits CODE within SECONDS
  local i
  for i in "${!task_pids[@]}"; do
    await_exit "${task_pids[$i]}" "$2"
    [ "$status" = "$1" ] || fail "${task_names[$i]} exited $status, not $1"
  done
}

echo "== 2. SIGTERM to the chief: a checkpoint at once, summary, every task stops, 143 and 138"
cluster "$dir/c2.json"
start_replicas "$dir/c2.json" 2 --connect-timeout 20 --dataset synthetic --model 784-64-10 \
  --steps 1000000 --no-progress --metrics "$dir/m2.jsonl" --checkpoint-dir "$dir/ckpt2" \
  --checkpoint-every 400000
await_training "$dir/m2.jsonl"
kill -TERM "$chief"
await_exit "$chief" 60; [ "$status" = 143 ] || fail "the chief exited $status after SIGTERM, not 143"
tasks_exit 138 20
grep -q "SIGTERM received: stopping the run" "$dir/chief2.log" || fail "the chief did not log SIGTERM"
signalled=$(sed -n 's/.*SIGTERM at clock \([0-9]*\): a checkpoint, then.*/\1/p' "$dir/chief2.log")
target=$(sed -n 's/.*SIGTERM: checkpoint at clock \([0-9]*\), then the run stops.*/\1/p' \
  "$dir/chief2.log" | tail -1)
[ -n "$signalled" ] && [ -n "$target" ] || fail "the chief did not say which checkpoint it stops at"
# not the scheduled one 400 000 clocks on: a checkpoint a few clocks past the signal
[ $((target - signalled)) -ge 1 ] && [ $((target - signalled)) -le 5000 ] ||
  fail "SIGTERM at clock $signalled checkpointed at clock $target"
grep -q "^summary: " "$dir/chief2.log" || fail "no summary after SIGTERM"
grep -q "stopped early by SIGTERM at clock" "$dir/chief2.log" || fail "the summary hides the stop"
ckpt=$(printf "%s/ckpt2/ckpt-%012d" "$dir" "$target")
[ -s "$ckpt/MANIFEST.json" ] || fail "no complete checkpoint at clock $target: $(ls "$dir/ckpt2")"
grep -q "\"event\":\"checkpoint\",\"clock\":$target," "$dir/m2.jsonl" || fail "no checkpoint event at $target"
line=$(grep '"event":"summary"' "$dir/m2.jsonl") || fail "no summary event after SIGTERM"
[ "$(summary_field "$line" stopped_by)" = SIGTERM ] || fail "summary: $line"
"$python" -c "import sys; sys.exit(0 if int(sys.argv[1]) >= int(sys.argv[2]) else 1)" \
  "$(summary_field "$line" stopped_at)" "$target" || fail "stopped before its checkpoint: $line"
grep -q "run_interrupted" "$dir/worker:0.2.log" || fail "worker:0 does not say why it stopped"
no_listeners "$dir/c2.json"

echo "== 3. SIGTERM to a worker: 143; SIGINT to the chief without checkpoints: 130 and 138"
cluster "$dir/c3.json"
start_replicas "$dir/c3.json" 3 --connect-timeout 20 --dataset synthetic --model 784-64-10 \
  --steps 1000000 --no-progress --metrics "$dir/m3.jsonl"
await_training "$dir/m3.jsonl"
worker1=${task_pids[3]}
task_pids=("${task_pids[@]:0:3}" "${task_pids[4]}")
kill -TERM "$worker1"
await_exit "$worker1" 20; [ "$status" = 143 ] || fail "worker:1 exited $status after SIGTERM, not 143"
grep -q " worker:1: SIGTERM: leaving (the chief knows), exiting 143" "$dir/worker:1.3.log" ||
  fail "worker:1 did not log SIGTERM, or the chief did not answer its leave"
# The chief tells the leave as one: in its log and in the failure event, not as a lost link.
await_event "$dir/chief3.log" "worker:1 left on SIGTERM; " 20
grep -q "worker:1 is leaving (SIGTERM)" "$dir/chief3.log" || fail "the chief did not log the leave"
! grep -q "worker:1 lost (remote_link_unreachable" "$dir/chief3.log" ||
  fail "the chief logged worker:1's leave as a lost link"
grep -q '"event":"failure","role":"worker","index":1,"reason":"left on SIGTERM"' "$dir/m3.jsonl" ||
  fail "the failure event does not say worker:1 left on SIGTERM: $(grep failure "$dir/m3.jsonl")"
kill -INT "$chief"
await_exit "$chief" 60; [ "$status" = 130 ] || fail "the chief exited $status after SIGINT, not 130"
tasks_exit 138 20
grep -q "stopped early by SIGINT at clock" "$dir/chief3.log" || fail "no summary after SIGINT"
no_listeners "$dir/c3.json"

echo "== 4. SIGKILL on the chief: every task exits 138 (retryable)"
cluster "$dir/c4.json"
start_replicas "$dir/c4.json" 4 --connect-timeout 5 --dataset synthetic --model 784-64-10 \
  --steps 1000000 --no-progress --metrics "$dir/m4.jsonl"
await_training "$dir/m4.jsonl"
kill -KILL "$chief"
tasks_exit 138 20
grep -q "is gone" "$dir/worker:0.4.log" || fail "worker:0 did not say the chief is gone"
no_listeners "$dir/c4.json"

echo "== 5. --bind 0.0.0.0, the data link on --data-port or the task's port + 1"
cluster "$dir/c5.json"
data0=$("$python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
flags=(--bind 0.0.0.0 --connect-timeout 20 --dataset synthetic --model 784-64-10 --steps 1000
       --slow worker:0=5 --no-progress --metrics "$dir/m5.jsonl")
task_pids=()
run_replica "$dir/c5.json" master 0 "$dir/chief5.log" "${flags[@]}"; chief=$!
run_replica "$dir/c5.json" ps 0 "$dir/ps:0.5.log" "${flags[@]}" --data-port "$data0"; task_pids+=($!)
for t in ps:1 worker:0 worker:1 evaluator:0; do
  run_replica "$dir/c5.json" "${t%%:*}" "${t##*:}" "$dir/$t.5.log" "${flags[@]}"; task_pids+=($!)
done
await_training "$dir/m5.jsonl"
data1=$(( $(port_of "$dir/c5.json" ps 1) + 1 ))
listening=$(ss -ltnH)
for port in $(port_of "$dir/c5.json" chief 0) $(port_of "$dir/c5.json" ps 0) \
            $(port_of "$dir/c5.json" worker 1) "$data0" "$data1"; do
  grep -q "0\.0\.0\.0:$port " <<< "$listening" || fail "nothing listens on 0.0.0.0:$port: $listening"
done
grep -q "data link on 0.0.0.0:$data0" "$dir/ps:0.5.log" || fail "ps:0 does not say where its data link is"
grep -q "data link on 0.0.0.0:$data1" "$dir/ps:1.5.log" || fail "ps:1's data link is not on its port + 1"
# The data ports answer on another interface of the host too (a stranger is logged by the shard).
ip=$(hostname -I 2>/dev/null | awk '{print $1}'); ip=${ip:-127.0.0.1}
for target in "0 $data0" "1 $data1"; do
  set -- $target
  "$python" -c "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2]))); s.sendall(b'\xff' * 4096); s.close()" "$ip" "$2"
  await_event "$dir/ps:$1.5.log" "refused a data connection from $ip" 10
done
await_exit "$chief" 120; [ "$status" = 0 ] || fail "the chief exited $status"
tasks_exit 0 20
no_listeners "$dir/c5.json"

echo "== 6. SIGTERM to every process at once: 143 everywhere"
cluster "$dir/c6.json"
start_replicas "$dir/c6.json" 6 --connect-timeout 20 --dataset synthetic --model 784-64-10 \
  --steps 1000000 --no-progress --metrics "$dir/m6.jsonl" --checkpoint-dir "$dir/ckpt6" \
  --checkpoint-every 50
await_training "$dir/m6.jsonl"
# The tasks first: each is then signalled before the chief's stop, or a lost shard, can reach
# it, which a task that exits 138 before its own signal came would not be (bash may be
# preempted between two kill calls on a loaded host; kubectl's order is any).
kill -TERM "${task_pids[@]}" "$chief"
tasks_exit 143 20
await_exit "$chief" 8; [ "$status" = 143 ] || fail "the chief exited $status, not 143"
grep -q "SIGTERM received" "$dir/chief6.log" || fail "the chief did not log SIGTERM"
no_listeners "$dir/c6.json"

echo PASS
