# Shell helpers for the tests that run one process per task on 127.0.0.1 (sourced, not run).
# Expects: $bin (the actorps binary) and $dir (a scratch directory); keeps pids in $pids.
python=$(command -v /usr/bin/python3 || command -v python3)
scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts"
free_port_pairs="$scripts/free_port_pairs.py"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
fail() {  # with every task's log, so that a failure in CI explains itself
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do echo "--- $(basename "$f")" >&2; tail -n 20 "$f" >&2; done
  exit 1
}
summary_field() { "$python" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
no_listeners() {  # no_listeners CLUSTER: fail if any address of the cluster still has a listener
  # Asked by binding the port, not by connecting to it: tests run side by side (ctest -j), and a
  # port of this cluster may be another test's task's by now, which would log our connection
  # as a stranger's (or a TLS handshake cut short) and fail that test. A listener makes the bind
  # fail with EADDRINUSE (SO_REUSEADDR lets it pass over connections closing on the port).
  "$python" - "$1" <<'PY' || fail "a task of $1 is still listening"
import errno, json, socket, sys
for addrs in json.load(open(sys.argv[1]))["cluster"].values():
    for a in addrs:
        host, port = a.rsplit(":", 1)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, int(port)))
        except OSError as e:
            if e.errno != errno.EADDRINUSE: raise
            print("still listening:", a); sys.exit(1)
        finally:
            s.close()
PY
}
cluster() {  # cluster FILE: free ports for chief, 2 ps, 2 workers, evaluator (ps port + 1 free)
  "$python" - "$1" $("$python" "$free_port_pairs" 6) <<'PY'
import json, sys
a = [f"127.0.0.1:{p}" for p in sys.argv[2:]]
json.dump({"cluster": {"chief": a[:1], "ps": a[1:3], "worker": a[3:5], "evaluator": a[5:]}}, open(sys.argv[1], "w"))
PY
}
scale_clusters() {  # scale_clusters SPARE_PS SPARE_WORKERS: $dir/c.json (chief, 2 ps, 2
  # workers) and $dir/grown.json (the same with that many more ps and worker tasks, the spares a
  # scale takes in), a certificate in $dir/certs for each of their tasks and admin:0; sets
  # $chief_addr and $net (the network flags every task of these tests takes)
  "$python" - "$dir" "$1" "$2" $("$python" "$free_port_pairs" $((5 + $1 + $2))) <<'PY'
import json, sys
d, more_ps, more_workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = [f"127.0.0.1:{p}" for p in sys.argv[4:]]
jobs = {"chief": a[:1], "ps": a[1:3], "worker": a[3:5]}
json.dump({"cluster": jobs}, open(f"{d}/c.json", "w"))
json.dump({"cluster": dict(jobs, ps=a[1:3] + a[5:5 + more_ps], worker=a[3:5] + a[5 + more_ps:])},
          open(f"{d}/grown.json", "w"))
PY
  chief_addr=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['cluster']['chief'][0])" "$dir/c.json")
  local tasks=(chief:0 admin:0) i
  for ((i = 0; i < 2 + $1; ++i)); do tasks+=("ps:$i"); done
  for ((i = 0; i < 2 + $2; ++i)); do tasks+=("worker:$i"); done
  "$scripts/make_certs.sh" "$dir/certs" "${tasks[@]}" > /dev/null
  net=(--heartbeat-ms 200 --peer-timeout-ms 2000 --connect-timeout 30)
}
start_job() {  # start_job NAME [chief flags...]: ps:0, ps:1 and both workers of scale_clusters'
  # c.json with $net and their TLS, then the chief with $train; pids in pid_NAME_TASK
  local name=$1; shift
  for t in ps:0 ps:1 worker:0 worker:1; do
    "$bin" "${t%%:*}" --cluster "$dir/c.json" --task "$t" "${net[@]}" $(tls "$t") \
      > "$dir/$name-$t.log" 2>&1 &
    pids+=($!); eval "pid_${name}_${t/:/_}=$!"
  done
  "$bin" chief --cluster "$dir/c.json" --task chief:0 "${net[@]}" $(tls chief:0) "${train[@]}" \
    --export-dir "$dir/$name-export" --metrics "$dir/$name.jsonl" "$@" > "$dir/$name-chief.log" 2>&1 &
  pids+=($!); eval "pid_${name}_chief=$!"
}
start_spare_ps() {  # start_spare_ps NAME: ps:2 of scale_clusters' grown.json joins run NAME
  # as a spare (pid in pid_NAME_ps_2); returns once the chief has it and NAME trains
  "$bin" ps --cluster "$dir/grown.json" --task ps:2 "${net[@]}" $(tls ps:2) > "$dir/$1-ps:2.log" 2>&1 &
  pids+=($!); eval "pid_${1}_ps_2=$!"
  await_event "$dir/$1.jsonl" '"event":"spare".*"task":"ps:2"'
  await_training "$dir/$1.jsonl"
}
port_of() { "$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['cluster'][sys.argv[2]][int(sys.argv[3])].split(':')[1])" "$1" "$2" "$3"; }
await_event() {  # await_event FILE PATTERN [SECONDS]: block until a line of FILE matches (bounded)
  grep -q -m1 -E "$2" < <(timeout "${3:-60}" tail -n +1 -F "$1" 2>/dev/null) || fail "no line matching $2 in $1"
}
await_exit() {  # await_exit PID SECONDS: sets $status to the child's exit status; fails when it
  local waited  # outlives SECONDS (not in $(...): only this shell can wait for its children)
  set +e; timeout "$2" tail --pid="$1" -f /dev/null; waited=$?; wait "$1"; status=$?; set -e
  [ "$waited" = 0 ] || fail "process $1 still running after $2 s"
}
await_training() { await_event "$1" '"event":"train"'; }
ask_scale() {  # ask_scale TASK FLAGS...: `actorps scale` with TASK's certificate; sets $scaled to
  # its exit status and $said to its output
  local as=$1
  shift
  set +e; said=$("$bin" scale --chief "$chief_addr" --timeout 60 $(tls "$as") "$@" 2>&1); scaled=$?; set -e
}
tls() {  # tls TASK: the TLS flags of TASK's certificate in $dir/certs (scripts/make_certs.sh)
  echo --tls-cert "$dir/certs/${1/:/-}.pem" --tls-key "$dir/certs/${1/:/-}.key" --tls-ca "$dir/certs/ca.pem"
}
all_exit_0() {  # all_exit_0 NAME TASK...: run NAME's chief and TASKs (pid_NAME_ps_0, ...) exit 0
  local name=$1 t pid; shift
  for t in chief "$@"; do
    pid=$(eval echo "\$pid_${name}_${t/:/_}")
    await_exit "$pid" 120
    [ "$status" = 0 ] || fail "$name: $t exited $status"
  done
}
