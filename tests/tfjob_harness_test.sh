#!/usr/bin/env bash
# The TFJob harness runs an actorps job the way Kubeflow's TFJob operator runs one,
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
# Scenarios: a sync job trains uninterrupted and exports its model (the reference). The same job
# again, its chief pod deleted after the first or second checkpoint event: everything restarts as above, and
# the job ends with the chief's 0, one history (the last chief resumed from a checkpoint of this
# run and finished every clock) and, sync being exact, the reference's model byte for byte. Then
# with the worker-1 pod deleted after the first checkpoint event and the chief's right after: the
# same, with a model as good (the replaced worker redoes its clocks, so the bytes may differ).
#
# usage: tests/tfjob_harness_test.sh ACTORPS_BINARY
set -euo pipefail
bin=$(realpath "$1")
# On tmpfs where there is one: the chief writes and fsyncs every checkpoint, and on a disk that
# the suite's other tests load (fuzz_build's compiles) an fsync took seconds, so the events the
# deletions wait for came after the job had ended (beside a writer fsyncing 200 MiB files and two
# busy loops: 2 of 2 runs failed on /tmp, 2 of 2 passed on /dev/shm).
scratch=/dev/shm
[ -d "$scratch" ] && [ -w "$scratch" ] || scratch=/tmp
dir=$(mktemp -d "$scratch/actorps-tfjob.XXXXXX")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster_test_lib.sh"

grace=10  # terminationGracePeriodSeconds (the manifest's 30 s is more than a test needs)

# The job's one command, as scripts/tfjob.yaml gives it to every replica (all four must agree).
mapfile -t command < <("$python" - "$here/../scripts/tfjob.yaml" <<'PY'
import sys, yaml
specs = yaml.safe_load(open(sys.argv[1]))["spec"]["tfReplicaSpecs"]
commands = {kind: spec["template"]["spec"]["containers"][0]["command"]
                  + spec["template"]["spec"]["containers"][0]["args"] for kind, spec in specs.items()}
if sorted(commands) != ["Chief", "Evaluator", "PS", "Worker"] or len(set(map(tuple, commands.values()))) != 1:
    sys.exit(f"scripts/tfjob.yaml: every replica must run the same command: {commands}")
command = commands["Chief"]
if command[0] != "actorps": sys.exit("scripts/tfjob.yaml: the command is not actorps")
print("\n".join(command[1:]))
PY
)
[ "${#command[@]}" -gt 1 ] || fail "could not read the command of scripts/tfjob.yaml"
# The manifest's TLS files come from its Secret, mounted at /etc/actorps/tls, each pod's own
# named by $(TASK) (TYPE-INDEX, the replica's name here): made here by make_certs.sh.
[[ " ${command[*]} " == *" --tls-cert /etc/actorps/tls/\$(TASK).pem "* ]] \
  || fail "scripts/tfjob.yaml runs without its TLS Secret: ${command[*]}"
"$here/../scripts/make_certs.sh" "$dir/certs" chief:0 ps:0 ps:1 worker:0 worker:1 evaluator:0 > /dev/null
command=("${command[@]//\/etc\/actorps\/tls/$dir/certs}")
steps=$(printf "%s\n" "${command[@]}" | sed -n '/^--steps$/{n;p}')

# Free ports for chief, 2 ps, 2 workers; each port + 1 free as well (a ps's data port).
read -r -a ports <<< "$("$python" "$here/../scripts/free_port_pairs.py" 5)"
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
  local own=("${command[@]//\$(TASK)/$2}")  # as Kubernetes expands $(TASK) from the pod's env
  (cd "$pod" && TF_CONFIG=$(tf_config "$2") exec "$bin" "${own[@]}") >>"$pod/pod.log" 2>&1 &
  pid_of[$2]=$!
  replica_of[$!]=$2
  echo "$!" > "$pod/pid.new" && mv "$pod/pid.new" "$pod/pid"  # for the deleter (operate)
  unset "exit_of[$2]"
  starts[$2]=$(( ${starts[$2]:-0} + 1 ))
  pids+=("$!")
}

# delete_pod JOB REPLICA: what `kubectl delete pod` does to its process, whose pid start wrote
# in the pod's directory; each deletion is counted in JOB's directory.
delete_pod() {
  local pid
  pid=$(cat "$dir/$1/$2/pid")
  echo "tfjob: deleting pod $2 (pid $pid)"
  echo "$2" >> "$dir/$1/deletions"
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
  starts=()
  for r in "${replicas[@]}"; do start "$job" "$r"; done
  local plan=("$@") pid status who deleted=0
  # The deleter deletes the pods itself, reading their pids where start writes them. Not by a
  # signal to this shell and a trap here: a replica that ended while the trap ran (worker-1,
  # deleted together with the chief) could be missed by `wait -n` below, and the job then waited
  # for it until the test's timeout (1 run in 4-10 with 3 busy loops, on this build and before).
  ( for d in "${plan[@]}"; do
      await_checkpoints "$dir/$job/chief-0/run.jsonl" "${d#*@}"
      delete_pod "$job" "${d%@*}"
    done ) &
  local deleter=$!
  while :; do
    unset pid
    status=0
    wait -n -p pid || status=$?
    who=${replica_of[${pid:-none}]:-}
    [ -n "$who" ] || continue  # a helper process ended
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
  [ -f "$dir/$job/deletions" ] && deleted=$(wc -l < "$dir/$job/deletions")
  [ "$deleted" = "${#plan[@]}" ] || fail "$job: only $deleted of ${#plan[@]} planned pod deletions happened"
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

# check_resumed JOB: the job's last chief ran every clock, resuming from a checkpoint of its own.
check_resumed() {
  local last resumed
  last=$(grep '"event":"summary"' "$dir/$1/chief-0/run.jsonl" | tail -n 1)
  [ -n "$last" ] || fail "$1: no summary"
  [ "$(summary_field "$last" clocks)" = "$steps" ] || fail "$1: ended at clock $(summary_field "$last" clocks), not $steps"
  resumed=$(summary_field "$last" resumed_from)
  [ "$resumed" -gt 0 ] || fail "$1: the last chief did not resume from a checkpoint (resumed_from $resumed)"
  # One history: every life of the chief left its lines, each from its own start event.
  local lives
  lives=$(grep -c '"event":"start"' "$dir/$1/chief-0/run.jsonl")
  [ "$lives" = "${starts[chief-0]}" ] || fail "$1: $lives start events for ${starts[chief-0]} chief processes"
  echo "tfjob: $1: chief started ${starts[chief-0]}x, resumed from clock $resumed, test accuracy $(summary_field "$last" final_test_accuracy)"
}

# The Done-when case: the chief pod deleted (SIGTERM) mid-run, every replica restarted with the
# same command; sync is exact, so the model is the uninterrupted run's byte for byte.
at=$((1 + RANDOM % 2))  # after which checkpoint event: a different clock from run to run (the
# events lag the shards by up to ~1200 clocks here; later ones may land in the last checkpoint)
echo "tfjob: the chief pod is deleted after checkpoint $at"
operate chief_deleted "chief-0@$at"
[ "${starts[chief-0]}" -ge 2 ] || fail "the chief pod was never restarted"
check_resumed chief_deleted
cmp "$ref/export/1/model.capnp" "$dir/chief_deleted/chief-0/export/1/model.capnp" ||
  fail "the restarted sync job's model differs from the uninterrupted one's"

# A worker pod deleted, then the chief's: the job still ends with one history and a model as good
# (the lost worker's clocks are redone by its replacement, so the parameters need not be equal).
# Both after the first checkpoint event: with a worker replaced, the shards may pass later
# checkpoints before the chief asks for them (skipped, no event), and the second event can be the
# final checkpoint's, when a SIGTERM lets the run end (a loaded suite saw resumed_from -1).
operate both_deleted worker-1@1 chief-0@1
[ "${starts[worker-1]}" -ge 2 ] || fail "the worker-1 pod was never restarted"
check_resumed both_deleted
"$python" - "$dir/reference/chief-0/export/1/metadata.json" "$dir/both_deleted/chief-0/export/1/metadata.json" <<'PY' || fail "the job with deletions trained a worse model"
import json, sys
ref, run = (json.load(open(p))["test_accuracy"] for p in sys.argv[1:])
print(f"tfjob: test accuracy {run:.4f}, uninterrupted {ref:.4f}")
sys.exit(0 if run >= ref - 0.02 else 1)
PY
echo PASS
