#!/usr/bin/env bash
# The TFJob harness (issue 18): runs an actorps job the way Kubeflow's TFJob operator runs one,
# on 127.0.0.1, and checks that pod deletions and restarts leave one continuous training.
#
# What the operator does, and this script does too:
# - every replica gets TF_CONFIG = {"cluster": {"chief", "ps", "worker"} (lower-cased types, NO
#   evaluator), "task": {"type", "index"}, "environment": "cloud"}; the evaluator's task is
#   evaluator:0, outside the cluster;
# - every replica runs the SAME command (scripts/tfjob.yaml's `args`), each in its own directory
#   (pods share no filesystem: checkpoints are written by the chief, on its volume);
# - restartPolicy ExitCode: a replica that exits 130, 137, 138 or 143 is started again with the
#   same command; any other non-zero code fails the job; the chief's 0 ends it;
# - `kubectl delete pod`: SIGTERM, then SIGKILL after the grace period.
#
# Scenario: a sync run trains uninterrupted and exports its model (the reference). The same job
# runs again; once its chief has written a checkpoint, the worker-1 pod is deleted, and once the
# chief has written another, the chief pod is deleted. Everything that exits restarts as above.
# The job must end with the chief's 0, one history (the chief resumed from a checkpoint of this
# run and finished every clock) and, sync being exact, a model byte for byte the reference's.
#
# usage: tests/tfjob_harness_test.sh ACTORPS_BINARY
set -euo pipefail
bin=$(realpath "$1")
dir=$(mktemp -d /tmp/actorps-tfjob.XXXXXX)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster_test_lib.sh"

grace=10  # terminationGracePeriodSeconds: a pod that has not exited by then gets SIGKILL
steps=240 every=40

# The job's one command (scripts/tfjob.yaml has the same flags).
command=(run --connect-timeout 60 --dataset synthetic --model 784-32-10 --mode sync
         --steps "$steps" --batch 32 --eval-every 0 --no-progress
         --checkpoint-dir ckpt --checkpoint-every "$every" --checkpoint-writer chief
         --resume auto --export-dir export --metrics run.jsonl)

# Free ports for chief, 2 ps, 2 workers; each port + 1 free as well (a ps's data port).
read -r -a ports <<< "$("$python" - <<'PY'
import socket
held, ports = [], []
while len(ports) < 5:
    s, t = socket.socket(), socket.socket()
    s.bind(("127.0.0.1", 0))
    try: t.bind(("127.0.0.1", s.getsockname()[1] + 1))
    except OSError: continue
    held += [s, t]; ports.append(s.getsockname()[1])
print(" ".join(map(str, ports)))
PY
)"
replicas=(chief-0 ps-0 ps-1 worker-0 worker-1 evaluator-0)

# tf_config REPLICA: the TF_CONFIG the operator gives that replica's pod.
tf_config() {
  "$python" - "$1" "${ports[@]}" <<'PY'
import json, sys
replica, ports = sys.argv[1], sys.argv[2:]
a = [f"127.0.0.1:{p}" for p in ports]
kind, index = replica.rsplit("-", 1)
print(json.dumps({"cluster": {"chief": a[:1], "ps": a[1:3], "worker": a[3:5]},
                  "task": {"type": kind, "index": int(index)}, "environment": "cloud"}))
PY
}

declare -A pid_of replica_of starts exit_of
# start JOB REPLICA: starts (or restarts) the replica's pod process in JOB's directory.
start() {
  local pod="$dir/$1/$2"
  mkdir -p "$pod"
  (cd "$pod" && TF_CONFIG=$(tf_config "$2") exec "$bin" "${command[@]}") >>"$pod/pod.log" 2>&1 &
  pid_of[$2]=$!
  replica_of[$!]=$2
  unset "exit_of[$2]"
  starts[$2]=$(( ${starts[$2]:-0} + 1 ))
  pids+=("$!")
}

# delete_pod REPLICA: what `kubectl delete pod` does to its process.
delete_pod() {
  local pid=${pid_of[$1]}
  echo "tfjob: deleting pod $1 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || return 0
  ( timeout "$grace" tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null ) &
}

# await_checkpoints FILE N: blocks until FILE holds N checkpoint events (at most 120 s).
await_checkpoints() {
  sed -n "$2{p;q}" < <(timeout 120 tail -n +1 -F "$1" 2>/dev/null |
                       grep --line-buffered '"event":"checkpoint"') | grep -q . ||
    fail "no checkpoint number $2 in $1"
}

# operate JOB [REPLICA@N...]: runs the job to its end as the operator would, deleting REPLICA's
# pod once the chief's metrics hold N checkpoint events (in the order given). Fails the test on
# an exit code TFJob treats as permanent.
operate() {
  local job=$1; shift
  mkdir -p "$dir/$job"
  for r in "${replicas[@]}"; do start "$job" "$r"; done
  local plan=("$@") next=0 pid status who
  # The deleter only waits and signals: the pods' pids live here, where restarts change them.
  ( for d in "${plan[@]}"; do
      await_checkpoints "$dir/$job/chief-0/run.jsonl" "${d#*@}"
      kill -USR1 $$
    done ) &
  local deleter=$!
  trap 'delete_pod "${plan[next]%@*}"; next=$((next + 1))' USR1
  while :; do
    unset pid
    status=0
    wait -n -p pid || status=$?
    who=${replica_of[${pid:-none}]:-}
    [ -n "$who" ] || continue  # a trap woke the wait, or a helper process ended
    unset "replica_of[$pid]"
    exit_of[$who]=$status
    echo "tfjob: $job: $who exited $status"
    case $status in
      0) [ "$who" = chief-0 ] && break ;;
      130|137|138|143) start "$job" "$who" ;;
      *) fail "$job: replica $who exited $status, which TFJob treats as permanent" ;;
    esac
  done
  kill "$deleter" 2>/dev/null || true
  trap - USR1
  [ "$next" = "${#plan[@]}" ] || fail "$job: only $next of ${#plan[@]} planned pod deletions happened"
  # The chief stopped every task before its 0: each ends with 0 as well.
  for r in "${replicas[@]}"; do
    if [ -z "${exit_of[$r]:-}" ]; then
      wait "${pid_of[$r]}" && exit_of[$r]=0 || exit_of[$r]=$?
    fi
    [ "${exit_of[$r]}" = 0 ] || fail "$job: $r exited ${exit_of[$r]} after the chief's clean end"
  done
}

operate reference
ref="$dir/reference/chief-0"
grep -q "exported to" "$ref/pod.log" || fail "the reference run did not export"

operate restarted worker-1@1 chief-0@2
run="$dir/restarted/chief-0"
[ "${starts[chief-0]}" -ge 2 ] || fail "the chief pod was never restarted"
[ "${starts[worker-1]}" -ge 2 ] || fail "the worker-1 pod was never restarted"
last=$(grep '"event":"summary"' "$run/run.jsonl" | tail -n 1)
[ -n "$last" ] || fail "the restarted job wrote no summary"
[ "$(summary_field "$last" clocks)" = "$steps" ] || fail "the restarted job ended at clock $(summary_field "$last" clocks), not $steps"
resumed=$(summary_field "$last" resumed_from)
[ "$resumed" -gt 0 ] || fail "the final chief did not resume from a checkpoint (resumed_from $resumed)"
cmp "$ref/export/1/model.capnp" "$run/export/1/model.capnp" ||
  fail "the restarted sync job's model differs from the uninterrupted one's"
echo "tfjob harness: chief started ${starts[chief-0]}x, worker-1 ${starts[worker-1]}x, resumed from clock $resumed; model.capnp identical to the uninterrupted run's"
