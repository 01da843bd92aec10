#!/usr/bin/env bash
# Usage: scripts/bench/failover_processes.sh [-o FILE] [-r RUNS] [-z FREEZES]
#
# Fail-over time of hot standbys (--replicas 1) with one process per task on 127.0.0.1: chief,
# 3 ps, 2 workers, sync, synthetic data, 400 clocks.
#  - RUNS runs (default 10) with two SIGKILLs each: ps:0 once the chief's metrics show clock
#    100 (shard 0 fails over), then ps:1 once every shard is protected again (its `rereplicated`
#    events; shards 0 and 1 fail over at once): 2 x RUNS kills.
#  - FREEZES runs (default 5) with one SIGSTOP of ps:0 at clock 100 and --heartbeat-ms 200
#    --peer-timeout-ms 1000: the chief declares it lost after the peer timeout.
# Every run must end with every clock and no rollback. Per kill, three figures:
#  failover_ms   the `failover` event's ms: the chief's detection to serving again (the
#                promoted standby took over, every worker re-sent to it); the largest of the
#                kill's events when it lost two primaries
#  observed_ms   from the signal to the last of its `failover` lines read from the metrics file,
#                as seen by the process that sent the signal (it reads the file as it grows,
#                through `tail -F`): detection, fail-over, and the write and read of the line
#  next_train_ms from the signal to the first `train` event read after those lines: training
#                is moving again
# Writes JSON (default scripts/bench/results/failover_processes.json): every kill, median and
# max of each figure for the SIGKILLs and for the SIGSTOPs, and the load average.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/scripts/bench/results/failover_processes.json"
runs=10 freezes=5
while getopts "o:r:z:h" opt; do
  case "$opt" in
    o) out="$(realpath -m "$OPTARG")" ;;
    r) runs="$OPTARG" ;;
    z) freezes="$OPTARG" ;;
    *) usage ;;
  esac
done
[[ $runs =~ ^[0-9]+$ && $freezes =~ ^[0-9]+$ ]] || usage
bin="${ACTORPS:-$root/build/actorps}"
[[ -x $bin ]] || { echo "failover_processes.sh: $bin is missing: build first" >&2; exit 1; }
python=$(command -v /usr/bin/python3 || command -v python3)

tmp="$(mktemp -d)"
pids=()
keep=  # set when a run failed: its logs stay for the reader
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$(dirname "$out")"
load_before="$(cut -d' ' -f1 /proc/loadavg)"
net=(--insecure --heartbeat-ms 200 --peer-timeout-ms 1000 --connect-timeout 20)

# observe METRICS SIGNAL PID0 PID1: sends SIGNAL to ps:0 at clock 100 (and, for KILL, to ps:1
# once shards 0 and 2 are protected again) and prints one JSON line per signal.
observe() {
  "$python" - "$@" <<'PY'
import json, os, re, signal, subprocess, sys, time
metrics, sig, pid0, pid1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tail = subprocess.Popen(["tail", "-n", "+1", "-F", metrics], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
signal.alarm(120)  # bounded: a run that stalls ends the observer (SIGALRM) and fails
rebuilt = set()    # shards whose standby was built again, whenever its event comes
def events():
    for line in tail.stdout:
        try: e = json.loads(line)
        except ValueError: continue
        if e["event"] == "rereplicated": rebuilt.add(e["shard"])
        yield e
stream = events()
def until(pred):
    for e in stream:
        if pred(e): return e
        if e["event"] == "summary": sys.exit("the run ended first")
    sys.exit("the metrics file ended")
def one_kill(pid, shards, kind):
    os.kill(pid, signal.SIGKILL if kind == "KILL" else signal.SIGSTOP)
    sent = time.monotonic()
    left, ms, observed = set(shards), [], None
    while left:
        # (a fail-over also writes a recovery that lost no clock; one that lost some is a rollback)
        e = until(lambda e: e["event"] in ("failover", "summary")
                  or (e["event"] == "recovery" and e["lost_clocks"] != 0))
        if e["event"] != "failover": sys.exit("no fail-over of shards %s: %s" % (sorted(left), e))
        left.discard(e["shard"]); ms.append(e["ms"])
        observed = (time.monotonic() - sent) * 1000
    until(lambda e: e["event"] == "train")
    return {"signal": kind, "shards": shards, "failover_ms": max(ms),
            "observed_ms": round(observed, 3), "next_train_ms": round((time.monotonic() - sent) * 1000, 3)}
until(lambda e: e["event"] == "train" and e["clock"] >= 100)
print(json.dumps(one_kill(pid0, [0], sig)), flush=True)
if sig == "KILL":
    # shard 0's next standby (task 2) and shard 2's (its old one died with task 0)
    if not {0, 2} <= rebuilt: until(lambda e: {0, 2} <= rebuilt)
    print(json.dumps(one_kill(pid1, [0, 1], sig)), flush=True)
tail.kill()
PY
}

one_run() {  # one_run N SIGNAL: appends the run's kills to $tmp/kills.jsonl
  local n=$1 sig=$2 run="$tmp/run$1" t chief status
  declare -A task_pid
  mkdir -p "$run"
  "$python" - "$run/c.json" $("$python" "$root/scripts/free_port_pairs.py" 6) <<'PY'
import json, sys
a = [f"127.0.0.1:{p}" for p in sys.argv[2:]]
json.dump({"cluster": {"chief": a[:1], "ps": a[1:4], "worker": a[4:6]}}, open(sys.argv[1], "w"))
PY
  for t in ps:0 ps:1 ps:2 worker:0 worker:1; do
    "$bin" "${t%%:*}" --cluster "$run/c.json" --task "$t" "${net[@]}" > "$run/$t.log" 2>&1 &
    task_pid[$t]=$!; pids+=($!)
  done
  : > "$run/m.jsonl"
  "$bin" chief --cluster "$run/c.json" --task chief:0 "${net[@]}" --dataset synthetic \
    --model 784-64-10 --steps 400 --mode sync --replicas 1 --slow worker:0=2 --slow worker:1=2 \
    --no-progress --metrics "$run/m.jsonl" > "$run/chief.log" 2>&1 &
  chief=$!; pids+=($chief)
  if ! observe "$run/m.jsonl" "$sig" "${task_pid[ps:0]}" "${task_pid[ps:1]}" > "$run/kills"; then
    echo "failover_processes.sh: run $n ($sig): the observer failed; logs in $run" >&2
    keep=1; exit 1
  fi
  status=0; timeout 120 tail --pid="$chief" -f /dev/null || true; wait "$chief" || status=$?
  kill -9 "${task_pid[ps:0]}" 2>/dev/null || true  # a frozen one is still there
  for t in "${!task_pid[@]}"; do wait "${task_pid[$t]}" 2>/dev/null || true; done
  if [ "$status" != 0 ] || ! grep -q '"event":"summary".*"clocks":400' "$run/m.jsonl" \
     || grep '"event":"recovery"' "$run/m.jsonl" | grep -vq '"lost_clocks":0,'; then
    echo "failover_processes.sh: run $n ($sig) did not end with every clock and no rollback" \
         "(chief exited $status); logs in $run" >&2
    keep=1; exit 1
  fi
  "$python" -c 'import json,sys; [print(json.dumps(dict(json.loads(l), run=int(sys.argv[1])))) for l in open(sys.argv[2])]' \
    "$n" "$run/kills" | tee -a "$tmp/kills.jsonl" >&2
  rm -rf "$run"
}

: > "$tmp/kills.jsonl"
for ((r = 1; r <= runs; ++r)); do one_run "$r" KILL; done
for ((r = 1; r <= freezes; ++r)); do one_run "$((runs + r))" STOP; done
load_after="$(cut -d' ' -f1 /proc/loadavg)"

"$python" - "$tmp/kills.jsonl" "$out" "$load_before" "$load_after" <<'PY'
import json, statistics, sys
kills_path, out, load_before, load_after = sys.argv[1:]
kills = [json.loads(l) for l in open(kills_path)]
def stats(sig, key):
    v = [k[key] for k in kills if k["signal"] == sig]
    return {"count": len(v), "median": statistics.median(v), "max": max(v)} if v else None
result = {"bench": "failover_processes",
          "setup": "chief, 3 ps, 2 workers, one process each on 127.0.0.1; sync, synthetic, "
                   "784-64-10, 400 clocks, --replicas 1, --heartbeat-ms 200 --peer-timeout-ms 1000",
          "load_before": float(load_before), "load_after": float(load_after)}
for sig in ("KILL", "STOP"):
    result[sig.lower()] = {key: stats(sig, key) for key in ("failover_ms", "observed_ms", "next_train_ms")}
result["kills"] = kills
json.dump(result, open(out, "w"), indent=1)
for sig in ("kill", "stop"):
    for key, s in result[sig].items():
        if s: print("SIG%-4s %-13s median %8.1f ms, max %8.1f ms over %d" % (sig.upper(), key, s["median"], s["max"], s["count"]))
print("JSON: " + out)
PY
