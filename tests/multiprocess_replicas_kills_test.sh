#!/usr/bin/env bash
# Hot standbys across processes, two ps processes SIGKILLed in one run (--replicas 1): chief,
# 3 ps, 2 workers on 127.0.0.1. ps:i's standby starts in ps task (i+1) mod 3; a standby whose
# task is lost is built again in the next live task, so after one kill every shard is
# protected again, and a second kill loses nothing either.
#  A. sync, no faults: the exported model is the reference.
#  B. sync: SIGKILL ps:0 once the chief's metrics show clock 100; shard 0 fails over to task 1
#     and gets a new standby in task 2, shard 2 (whose standby was in task 0) a new one in
#     task 1: the test waits for both `rereplicated` events, then SIGKILLs ps:1 (now serving
#     shards 0 and 1), whose standbys in task 2 take over. 3 fail-overs, no rollback, and the
#     exported model.capnp byte-identical to A's.
#  C, D. ssp and async, the same two kills: every shard accepted and applied exactly the pushes
#     the workers sent (one per shard for each clock a worker reported), none lost, none twice.
#  E. sync: SIGKILL ps:0 and worker:1 at once. The fail-over asks every worker it knows to
#     re-send; one whose process is gone never answers, so the fail-over stops waiting for it
#     when its loss is known: the `failover` event comes in well under a second (not after the
#     2 min request timeout) and the run ends with worker:0 alone once worker:1 is given up.
#  G. sync: SIGKILL ps:0 and start it again with the same command (as Kubernetes restarts a
#     pod): the new process is not taken for a second loss of shard 0 (served by ps:1 since
#     the fail-over) but joins as a host of standbys. Then SIGKILL ps:1 and, once protected
#     again, ps:2: the new ps:0 process took standbys and ends up serving all 3 shards. 6
#     fail-overs, no rollback, model.capnp byte-identical to run A's.
#  F. sync: SIGKILL ps:0; once shard 0 is served in task 1 and every shard is protected again,
#     SIGKILL worker:1 and start it again with the same command (as an orchestrator does). Its
#     setup names shard 0 by ps:0's address, dead now: the chief's setup carries the promoted
#     shard's handle instead, so the new process starts its role (its log says so, the chief
#     records the worker's recovery) and trains the rest of its data: entering N clocks behind
#     its previous process, it runs N clocks past the end. The run has every clock, 1
#     fail-over, no rollback, and each shard applied exactly one update per clock (those N
#     included). (Not the model of run A: while worker:1 is away, the shards average worker:0's
#     pushes alone.)
# Every wait reads the metrics file as it grows (no sleeps).
# usage: tests/multiprocess_replicas_kills_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mprk.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

steps=400
# a peer is lost after 4 s of silence: only SIGKILLs here, seen as the connection closes
net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 4000)
declare -A task_pid

three_ps_cluster() {  # FILE: chief, 3 ps, 2 workers on free ports
  "$python" - "$1" $("$python" "$free_port_pairs" 6) <<'PY'
import json, sys
a = [f"127.0.0.1:{p}" for p in sys.argv[2:]]
json.dump({"cluster": {"chief": a[:1], "ps": a[1:4], "worker": a[4:6]}}, open(sys.argv[1], "w"))
PY
}

start_task() {  # start_task NAME TASK: one task process of run NAME (again, after a kill)
  local net=("${net[@]}" --connect-timeout "${connect_timeout:-20}")
  "$bin" "${2%%:*}" --cluster "$dir/$1.json" --task "$2" "${net[@]}" >> "$dir/$1-$2.log" 2>&1 &
  task_pid[$2]=$!; pids+=($!)
}

start_run() {  # start_run NAME MODE: every task of run NAME in the background; the chief in $chief
  local name=$1 mode=$2
  three_ps_cluster "$dir/$name.json"
  for t in ps:0 ps:1 ps:2 worker:0 worker:1; do start_task "$name" "$t"; done
  : > "$dir/$name.jsonl"
  "$bin" chief --cluster "$dir/$name.json" --task chief:0 "${net[@]}" \
    --connect-timeout "${connect_timeout:-20}" --dataset synthetic \
    --model 784-64-10 --steps $steps --mode "$mode" --replicas 1 --slow worker:0=${slow:-2} \
    --slow worker:1=${slow:-2} --no-progress --metrics "$dir/$name.jsonl" \
    --export-dir "$dir/$name-model" > "$dir/$name-chief.log" 2>&1 &
  chief=$!; pids+=($chief)
}

two_kills() {  # two_kills NAME: ps:0 at clock 100, ps:1 once every shard is protected again
  local name=$1
  await_event "$dir/$name.jsonl" '"event":"train".*"clock":10[0-9],' 120
  kill -9 "${task_pid[ps:0]}"
  await_event "$dir/$name.jsonl" '"event":"failover","shard":0,' 30
  # shard 0's next standby (task 2) and shard 2's (its old one died with task 0; now task 1)
  await_event "$dir/$name.jsonl" '"event":"rereplicated","shard":0,' 30
  await_event "$dir/$name.jsonl" '"event":"rereplicated","shard":2,' 30
  local protected_at; protected_at=$(grep -c '"event":"train"' "$dir/$name.jsonl")
  kill -9 "${task_pid[ps:1]}"
  await_event "$dir/$name.jsonl" '"event":"failover","shard":1,' 30
  echo "run $name: ps:1 killed once protected again (after $protected_at train events)"
}

# await_protected NAME FAILOVERS: until run NAME had FAILOVERS fail-overs and every fail-over and
# lost standby is answered by a standby built again (read as the metrics file grows, bounded)
await_protected() {
  "$python" -c '
import sys
want, f, s, r = int(sys.argv[1]), 0, 0, 0
for line in sys.stdin:
    f += "\"event\":\"failover\"" in line
    s += "\"event\":\"standby_lost\"" in line
    r += "\"event\":\"rereplicated\"" in line
    if f >= want and f + s == r:
        sys.exit(0)
sys.exit(1)' "$2" < <(timeout 60 tail -n +1 -F "$dir/$1.jsonl" 2>/dev/null) \
    || fail "run $1: not protected again after $2 fail-overs"
}

finish_run() {  # finish_run NAME FAILOVERS: the chief exits 0 with every clock, no rollback
  local name=$1 failovers=$2
  await_exit "$chief" 180
  [ "$status" = 0 ] || fail "run $name: the chief exited $status"
  summary=$(grep '"event":"summary"' "$dir/$name.jsonl") || fail "run $name: no summary"
  [ "$(summary_field "$summary" clocks)" = $steps ] || fail "run $name: clocks: $summary"
  [ "$(summary_field "$summary" failovers)" = "$failovers" ] || fail "run $name: failovers: $summary"
  ! grep '"event":"recovery"' "$dir/$name.jsonl" | grep -v '"lost_clocks":0,' \
    || fail "run $name rolled back"
  ! grep -q '"event":"checkpoint"' "$dir/$name.jsonl" || fail "run $name wrote a checkpoint"
  for t in ${survivors:-ps:2 worker:0 ${survivor:-worker:1}}; do
    await_exit "${task_pid[$t]}" 15
    [ "$status" = 0 ] || fail "run $name: $t exited $status"
  done
}

# every_push_applied_once NAME UPDATES_PER_CLOCK: each shard accepted one push per (worker,
# clock) the workers reported, and applied the updates the mode makes of them (sync: one per
# clock, ssp and async: one per push)
every_push_applied_once() {
  "$python" - "$dir/$1.jsonl" "$2" <<'PY' || fail "run $1: pushes not accounted for"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
summary = next(e for e in events if e["event"] == "summary")
sent = {(e["worker"], e["clock"]) for e in events if e["event"] == "train"}
clocks = {c for _, c in sent}
expected_updates = len(clocks) if sys.argv[2] == "clock" else len(sent)
print("pushes sent to each shard:", len(sent), "| accepted:", summary["pushes_per_shard"],
      "| applied:", summary["updates_per_shard"], "(expected %d)" % expected_updates)
ok = len(summary["pushes_per_shard"]) == 3 and len(sent) == 2 * summary["clocks"]
ok = ok and all(p == len(sent) for p in summary["pushes_per_shard"])
ok = ok and all(u == expected_updates for u in summary["updates_per_shard"])
sys.exit(0 if ok else 1)
PY
}

echo "== A. sync, 3 ps tasks, --replicas 1, no faults"
start_run a sync
finish_run a 0
every_push_applied_once a clock

echo "== B. sync: SIGKILL ps:0 at clock 100, then ps:1 once protected again"
start_run b sync
two_kills b
finish_run b 3
grep '"event":"failover"' "$dir/b.jsonl"
every_push_applied_once b clock
a_sum=$(cd "$dir/a-model/1" && sha256sum model.capnp) || fail "run a exported no model"
b_sum=$(cd "$dir/b-model/1" && sha256sum model.capnp) || fail "run b exported no model"
[ "$a_sum" = "$b_sum" ] || fail "the models differ: $a_sum / $b_sum"
echo "model.capnp byte-identical: $a_sum"

for mode in ssp async; do
  echo "== $mode: the same two kills, every push applied once"
  start_run "$mode" "$mode"
  two_kills "$mode"
  finish_run "$mode" 3
  every_push_applied_once "$mode" push
done
echo "== E. sync: SIGKILL ps:0 and worker:1 at once"
# worker:1 is not restarted: the chief gives it up after --connect-timeout (short here)
connect_timeout=6 start_run e sync
await_event "$dir/e.jsonl" '"event":"train".*"clock":10[0-9],' 120
kill -9 "${task_pid[ps:0]}" "${task_pid[worker:1]}"
await_event "$dir/e.jsonl" '"event":"failover","shard":0,' 30
survivor=ps:1 finish_run e 1
failover=$(grep '"event":"failover"' "$dir/e.jsonl")
echo "$failover"
"$python" -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])["ms"] < 1000 else 1)' "$failover" \
  || fail "run e: the fail-over waited for the lost worker: $failover"
grep -q "worker:1 could not be replaced\|worker:1 lost\|worker:1 left" "$dir/e-chief.log" || fail "run e: worker:1's loss not seen"
echo "== G. sync: SIGKILL ps:0 and start it again; then ps:1 and ps:2, each once protected again"
slow=8 start_run g sync
await_event "$dir/g.jsonl" '"event":"train".*"clock":10[0-9],' 120
kill -9 "${task_pid[ps:0]}"
await_event "$dir/g.jsonl" '"event":"failover","shard":0,' 30
wait "${task_pid[ps:0]}" 2>/dev/null || true
start_task g ps:0
await_event "$dir/g-chief.log" 'ps:0 is back from a new process, as a host of standbys' 30
await_protected g 1
kill -9 "${task_pid[ps:1]}"
await_protected g 3
# the standbys the new process hosts (its log comes after the first process's, from its
# "data link on" line): shards 0 and 1 now in ps:2, and 2, each put in the next live task
standbys_in_new_ps0=$(awk '/data link on/ { ++started } started == 2 && /where the primary of its standby/ { ++n } END { print n + 0 }' "$dir/g-ps:0.log")
kill -9 "${task_pid[ps:2]}"
survivors="ps:0 worker:0 worker:1" finish_run g 6
grep -c '"event":"failover"' "$dir/g.jsonl"
[ "$standbys_in_new_ps0" = 3 ] || fail "run g: the new ps:0 process hosted $standbys_in_new_ps0 standbys, not 3"
g_sum=$(cd "$dir/g-model/1" && sha256sum model.capnp) || fail "run g exported no model"
[ "$a_sum" = "$g_sum" ] || fail "run g: the models differ: $a_sum / $g_sum"
echo "run g: every shard ends in the restarted ps:0; model.capnp byte-identical: $g_sum"
echo "== F. sync: SIGKILL ps:0, then worker:1 once protected again, and start worker:1 again"
start_run f sync
await_event "$dir/f.jsonl" '"event":"train".*"clock":10[0-9],' 120
kill -9 "${task_pid[ps:0]}"
await_event "$dir/f.jsonl" '"event":"failover","shard":0,' 30
await_event "$dir/f.jsonl" '"event":"rereplicated","shard":0,' 30
await_event "$dir/f.jsonl" '"event":"rereplicated","shard":2,' 30
kill -9 "${task_pid[worker:1]}"
wait "${task_pid[worker:1]}" 2>/dev/null || true
start_task f worker:1  # at once, as the chaos supervisor does
await_event "$dir/f.jsonl" '"event":"recovery","role":"worker"' 60
finish_run f 1
[ "$(grep -c "starting worker 1" "$dir/f-worker:1.log")" = 2 ] \
  || fail "run f: worker:1's second process did not start its role"
grep "starting worker 1" "$dir/f-worker:1.log" | tail -n 1
! grep -q "could not be replaced\|could not start" "$dir/f-chief.log" || fail "run f: worker:1 given up"
"$python" - "$dir/f.jsonl" <<'PY' || fail "run f: updates or worker:1's training not accounted for"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
summary = next(e for e in events if e["event"] == "summary")
back = next(e for e in events if e["event"] == "recovery" and e["role"] == "worker")
after = [e["clock"] for e in events if e["event"] == "train" and e["worker"] == 1
         and e["clock"] >= back["clock"]]
behind = back["behind_clocks"]  # trained past the end: its previous process's rest
print("worker:1 back at clock", back["clock"], "| its clocks since:", len(after),
      "| updates per shard:", summary["updates_per_shard"], "of", summary["clocks"], "clocks +",
      behind, "behind")
ok = all(u == summary["clocks"] + behind for u in summary["updates_per_shard"])
sys.exit(0 if ok and after and max(after) == summary["clocks"] - 1 + behind else 1)
PY
echo PASS
