#!/usr/bin/env bash
# Hot standbys with one process per task (--replicas 1) on 127.0.0.1: chief, 2 ps, 2 workers,
# sync mode. ps:0's standby runs in ps:1 and ps:1's in ps:0. The same run twice:
#  A. without faults: the exported model is the reference;
#  B. SIGKILL the ps:0 process once the chief's metrics show clock 150: ps:1 promotes shard 0's
#     standby, the workers re-send to it, and the run completes with a `failover` event, no
#     rollback, no checkpoint, and an exported model (model.capnp, model.onnx) byte-identical
#     to A's.
#  C. the run of B with mutual TLS (scripts/make_certs.sh): each ps task dials the task of its
#     standby's primary, so replication never passes through the chief (which relays nothing
#     over TLS, basp_origin.hpp): no connection is refused anywhere, and the exported model is
#     byte-identical to A's, which ran without TLS and without the kill.
#  D. the run of B with an evaluator task evaluating every 50 clocks: after the fail-over the
#     chief sets the evaluator up again on the new shard list (shard 0 served by ps:1), and the
#     evaluations after it score the promoted shard's values, which move on.
# The failover event's `ms` (detection to serving again) is printed. And --replicas 1 with a
# single ps task is refused with a usage error naming the flag.
# usage: tests/multiprocess_replicas_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mpr.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

# a peer is lost after 4 s of silence: only SIGKILLs here (seen as the connection closes), and
# a shorter timeout took a process stalled by a loaded machine for lost (run A, once in a suite)
net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 4000 --connect-timeout 20)
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

# --- the TLS run (C): its own functions, beside the plain ones above ---
tls_flags() {  # tls_flags TASK: the --tls-* flags of TASK with the certificates of $dir/certs
  local file=${1/:/-}
  echo --tls-cert "$dir/certs/$file.pem" --tls-key "$dir/certs/$file.key" --tls-ca "$dir/certs/ca.pem"
}

start_tls_run() {  # start_tls_run NAME: start_run with mutual TLS on every connection
  local name=$1
  [ -d "$dir/certs" ] || "$root/scripts/make_certs.sh" "$dir/certs" chief:0 ps:0 ps:1 worker:0 worker:1 > /dev/null
  cluster_without_evaluator "$dir/$name.json"
  for t in ps:0 ps:1 worker:0 worker:1; do
    "$bin" "${t%%:*}" --cluster "$dir/$name.json" --task "$t" "${net[@]:1}" $(tls_flags "$t") \
      >> "$dir/$name-$t.log" 2>&1 &
    task_pid[$t]=$!; pids+=($!)
  done
  : > "$dir/$name.jsonl"
  "$bin" chief --cluster "$dir/$name.json" --task chief:0 "${net[@]:1}" "${run[@]}" $(tls_flags chief:0) \
    --metrics "$dir/$name.jsonl" --export-dir "$dir/$name-model" > "$dir/$name-chief.log" 2>&1 &
  chief=$!; pids+=($chief)
}

no_refusals() {  # no_refusals NAME: no task of run NAME refused a connection or a message
  local refused
  # The chief asks the two ps tasks of a pair to dial each other for their standbys one at a
  # time (state.hpp standby_dials). Still, with TLS, the second dial's first connection is
  # sometimes cut by its own client before the TLS handshake ends, a few ms after the first
  # dial connected (ps:1 logs "refused a connection from 127.0.0.1:P: no TLS handshake ...
  # (unexpected eof while reading)", then ps:0 connects on its retry 50 ms later). Seen in 1 of
  # 3 runs beside multiprocess_faults with an older build as with a newer one;
  # the cause is not found (CAF's handling of a dial to a node that has just dialled in?). That
  # one line is tolerated when both dials then connected; any other refusal fails the run.
  refused=$(grep -h "refused\|relays nothing\|not authorised\|no TLS handshake" "$dir/$1"-*.log \
    | grep -v "ps:[01]: refused a connection from 127\.0\.0\.1:[0-9]*: no TLS handshake with the cluster's certificates (unexpected eof while reading)$") \
    || { [ "$(grep -l "connected to ps:" "$dir/$1"-ps:*.log | wc -l)" = 2 ] || \
           fail "run $1: the ps tasks did not both connect to each other for their standbys"
         return 0; }
  fail "run $1 refused something: $refused"
}

same_model_as_a() {  # same_model_as_a NAME: run NAME exported run a's model, byte for byte
  local sum
  sum=$(cd "$dir/$1-model/1" && sha256sum model.capnp model.onnx) || fail "run $1 exported no model"
  [ "$a_sum" = "$sum" ] || fail "run $1's model differs from run a's:
$a_sum
---
$sum"
}

survivors_exit_0() {  # survivors_exit_0 NAME: every task of run NAME but ps:0 exits 0
  for t in ps:1 worker:0 worker:1; do
    await_exit "${task_pid[$t]}" 15
    [ "$status" = 0 ] || fail "run $1: $t exited $status"
  done
}

# --- the run with an evaluator task (D) ---
start_eval_run() {  # start_eval_run NAME: start_run plus evaluator:0, evaluating every 50 clocks
  local name=$1
  cluster "$dir/$name.json"
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    "$bin" "${t%%:*}" --cluster "$dir/$name.json" --task "$t" "${net[@]}" >> "$dir/$name-$t.log" 2>&1 &
    task_pid[$t]=$!; pids+=($!)
  done
  : > "$dir/$name.jsonl"
  "$bin" chief --cluster "$dir/$name.json" --task chief:0 "${net[@]}" "${run[@]}" --eval-every 50 \
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
set +e; out=$("$bin" chief --cluster "$dir/one.json" --task chief:0 --insecure "${run[@]}" 2>&1); s=$?; set -e
[ "$s" = 2 ] || fail "--replicas 1 with one ps task exited $s: $out"
grep -q -- "--replicas 1 needs at least 2 ps tasks" <<< "$out" || fail "no clear error: $out"

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
same_model_as_a b
survivors_exit_0 b
echo "== C. the run of B with mutual TLS: the ps tasks connect to each other directly"
start_tls_run c
await_event "$dir/c.jsonl" '"event":"train".*"clock":15[0-9]' 120
for t in ps:0 ps:1; do  # each hosts the standby of the other's shard, and dialled it
  other=ps:$(( 1 - ${t#ps:} ))
  grep -q "connected to $other at .*, where the primary of its standby" "$dir/c-$t.log" \
    || fail "$t did not connect to $other: $(cat "$dir/c-$t.log")"
done
kill -9 "${task_pid[ps:0]}"
await_event "$dir/c.jsonl" '"event":"failover","shard":0' 30
finish_run c
[ "$(summary_field "$summary" failovers)" = 1 ] || fail "run c: failovers: $summary"
no_refusals c
echo "TLS failover: $(grep '"event":"failover"' "$dir/c.jsonl")"
same_model_as_a c
survivors_exit_0 c

echo "== D. the run of B with an evaluator task: evaluations go on from the promoted shard"
start_eval_run d
await_event "$dir/d.jsonl" '"event":"train".*"clock":15[0-9]' 120
kill -9 "${task_pid[ps:0]}"
await_event "$dir/d.jsonl" '"event":"failover","shard":0' 30
finish_run d
failed_at=$(summary_field "$(grep '"event":"failover"' "$dir/d.jsonl")" clock)
grep -q "^.*evaluator:0: connected to 2 shard(s) (data links: caf, " "$dir/d-evaluator:0.log" \
  || fail "the evaluator was not set up again with shard 0 over CAF: $(cat "$dir/d-evaluator:0.log")"
# the periodic evaluations after the fail-over: at least two, and their losses differ
after=$("$python" - "$dir/d.jsonl" "$failed_at" <<'PY'
import json, sys
evals = [json.loads(l) for l in open(sys.argv[1]) if '"event":"eval"' in l]
after = [e for e in evals if e["clock"] > int(sys.argv[2]) and not e["final"]]
print(len(after), len({e["test_loss"] for e in after}))
PY
)
[ "${after%% *}" -ge 2 ] && [ "${after##* }" -ge 2 ] \
  || fail "evaluations after the fail-over at clock $failed_at (count, distinct losses): $after"
echo "evaluations after the fail-over (count, distinct losses): $after"
same_model_as_a d

echo PASS
