#!/usr/bin/env bash
# Starts a whole actorps cluster on 127.0.0.1, one process per task, on free ports:
# P parameter shards, W workers, the evaluator and the chief. Flags after `--` go to the chief
# (the training flags); every line a task prints is prefixed with its task name. Exits with the
# chief's status; Ctrl-C stops every task. Mutual TLS unless --insecure: a CA and one
# certificate per task (scripts/make_certs.sh, in the run directory), every task started with
# its own (--tls, the default, is accepted for older command lines).
#
# usage: scripts/launch_local.sh --ps P --workers W [--no-evaluator] [--connect-timeout S]
#          [--binary PATH] [--keep-cluster FILE] [--insecure | --keep-certs DIR]
#          [--data-link auto|tcp|socket|shm] -- [chief flags...]
# e.g.   scripts/launch_local.sh --ps 2 --workers 2 -- --epochs 5 --mode ssp --metrics run.jsonl
set -euo pipefail

usage() { sed -n 9,12p "$0" >&2; exit 2; }
ps=2 workers=2 evaluator=1 connect_timeout=60 binary="" keep_cluster="" tls=1 keep_certs=""
data_link=auto  # how workers and the evaluator reach each shard's data link (every task gets it)
while [ $# -gt 0 ]; do
  case $1 in
    --ps) ps=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --no-evaluator) evaluator=0; shift ;;
    --connect-timeout) connect_timeout=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --keep-cluster) keep_cluster=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    --insecure) tls=0; shift ;;
    --keep-certs) keep_certs=$2; shift 2 ;;
    --data-link) data_link=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "launch_local.sh: unknown flag $1" >&2; usage ;;
  esac
done
[[ $ps =~ ^[1-9][0-9]*$ ]] || { echo "launch_local.sh: --ps must be a positive number" >&2; exit 2; }
[[ $workers =~ ^[1-9][0-9]*$ ]] || { echo "launch_local.sh: --workers must be a positive number" >&2; exit 2; }
[[ $data_link =~ ^(auto|tcp|socket|shm)$ ]] || { echo "launch_local.sh: --data-link must be auto, tcp, socket or shm" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${binary:-${ACTORPS_BINARY:-$root/build/actorps}}
# installed (cmake --install): this script is in PREFIX/share/actorps/scripts, actorps in PREFIX/bin
[ -x "$binary" ] || [ ! -x "$root/../../bin/actorps" ] || binary=$(cd "$root/../../bin" && pwd)/actorps
[ -x "$binary" ] || { echo "launch_local.sh: $binary is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)

dir=$(mktemp -d /tmp/actorps-cluster.XXXXXX)
pids=()
cleanup() {  # stop every task still running and reap it: gone, ports closed, when we return
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "launch_local.sh: interrupted, stopping every task" >&2; exit 130' INT TERM

# Free ports: bind to port 0 and let the kernel choose (all at once, so they differ), each with
# the port after it free too: a ps task's data link listens on its port + 1.
count=$((1 + ps + workers + evaluator))
read -r -a ports <<< "$("$python" "$root/scripts/free_port_pairs.py" "$count")"
"$python" - "$dir/cluster.json" "$ps" "$workers" "$evaluator" "${ports[@]}" <<'PY'
import json, sys
path, ps, workers, evaluator = sys.argv[1], *map(int, sys.argv[2:5])
ports = iter(sys.argv[5:])
addr = lambda: f"127.0.0.1:{next(ports)}"
cluster = {"chief": [addr()], "ps": [addr() for _ in range(ps)], "worker": [addr() for _ in range(workers)]}
if evaluator: cluster["evaluator"] = [addr()]
json.dump({"cluster": cluster}, open(path, "w"), indent=1)
PY
[ -n "$keep_cluster" ] && cp "$dir/cluster.json" "$keep_cluster"
[ -n "$keep_certs" ] && [ "$tls" = 0 ] && { echo "launch_local.sh: --keep-certs cannot go with --insecure" >&2; exit 2; }

# set_tls_flags TASK: tls_flags becomes that task's TLS flags (--insecure with --insecure)
tls_flags=()
set_tls_flags() {
  tls_flags=(--insecure)
  [ "$tls" = 1 ] || return 0
  local base="$dir/certs/${1/:/-}"
  tls_flags=(--tls-cert "$base.pem" --tls-key "$base.key" --tls-ca "$dir/certs/ca.pem")
}
if [ "$tls" = 1 ]; then
  tasks=(chief:0)
  for ((i = 0; i < ps; i++)); do tasks+=("ps:$i"); done
  for ((i = 0; i < workers; i++)); do tasks+=("worker:$i"); done
  [ "$evaluator" = 1 ] && tasks+=(evaluator:0)
  "$root/scripts/make_certs.sh" "$dir/certs" "${tasks[@]}" > /dev/null
  if [ -n "$keep_certs" ]; then mkdir -p "$keep_certs" && cp -p "$dir/certs"/* "$keep_certs"/; fi
fi

# A ps task writes checkpoint files only under its own --checkpoint-dir: the chief's, if given.
# The bounds on gradients and parameters (--max-gradient, --max-parameter,
# --gradient-norm-bound) go along likewise.
shard_flags=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --checkpoint-dir|--max-gradient|--max-parameter|--gradient-norm-bound)
      shard_flags+=("${args[i]}" "${args[i+1]:-}") ;;
    --checkpoint-dir=*|--max-gradient=*|--max-parameter=*|--gradient-norm-bound=*) shard_flags+=("${args[i]}") ;;
  esac
done
start() {  # start TYPE INDEX: a background task whose lines are prefixed with its name
  local task="$1:$2" own=()
  [ "$1" = ps ] && own=("${shard_flags[@]}")
  set_tls_flags "$task"
  "$binary" "$1" --cluster "$dir/cluster.json" --task "$task" --connect-timeout "$connect_timeout" \
    --data-link "$data_link" ${own[@]+"${own[@]}"} ${tls_flags[@]+"${tls_flags[@]}"} > >(sed -u "s/^/$task | /") 2>&1 &
  pids+=($!)
}
for ((i = 0; i < ps; i++)); do start ps "$i"; done
for ((i = 0; i < workers; i++)); do start worker "$i"; done
[ "$evaluator" = 1 ] && start evaluator 0

# The chief runs in the background too: `wait` lets a signal sent to this script alone (not just
# a terminal's Ctrl-C, which reaches every process) run the trap at once.
set_tls_flags chief:0
"$binary" chief --cluster "$dir/cluster.json" --task chief:0 --connect-timeout "$connect_timeout" \
  --data-link "$data_link" ${tls_flags[@]+"${tls_flags[@]}"} "$@" > >(sed -u "s/^/chief:0 | /") 2>&1 &
chief=$!
pids+=("$chief")
set +e
wait "$chief"
status=$?
set -e
unset 'pids[-1]'  # the chief has ended; only the tasks remain to be waited for

# Every task stops on its own when the chief ends; give them a bounded grace period.
# The watchdog must never run our traps: with them it would run cleanup on its own stale copy
# of the pids (kill and wait what is not its own: bash's "wait_for: No record of process").
# It drops them at once, and is stopped with SIGKILL, which no trap sees, in case it has not yet.
( trap - EXIT INT TERM; sleep 10 < /dev/null > /dev/null 2>&1
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done ) &
watchdog=$!
disown "$watchdog"  # stopped below without a job notice ("Killed") on the terminal
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
kill -KILL "$watchdog" 2>/dev/null || true
pids=()
[ "$status" -eq 0 ] && [ "$failed" -gt 0 ] && echo "launch_local.sh: $failed task(s) exited non-zero" >&2
exit "$status"
