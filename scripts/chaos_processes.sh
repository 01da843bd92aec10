#!/usr/bin/env bash
# Usage: scripts/chaos.sh --processes [--replicas] [-n RUNS] [-s SEED] [-t SECONDS] [-o FILE]
#
# Chaos with whole processes and an orchestrator that restarts what dies: RUNS (default 20)
# multi-process trainings on 127.0.0.1 (chief, 2 ps, 2 workers, evaluator; synthetic data,
# 500 clocks, a checkpoint every 50), every replica started with the same `actorps run`
# command and its TF_CONFIG, the chief with --resume auto. Once training runs, 1 to 3 times at a random
# moment: SIGKILL one random ps or worker, or two at once, or SIGSTOP one and SIGCONT it 1-3 s
# later. A supervisor per task starts it again with the same command whenever it exits with a
# retryable code (137, 138, 143) while the chief runs, as TFJob's ExitCode policy does.
# A run completes when the chief exits 0 with a summary and every process exited as README's
# "Exit codes" says: a killed one 137, one the chief lost (frozen past the peer timeout) 138,
# the last process of each task 0 (or 138 when it started once the run was ending). Prints
# per run and in all (completions, each failure's cause, recovery times, final accuracies) and
# writes the same as JSON (default build/bench/chaos_processes.json). Same SEED, same plan.
#
# --replicas: every run with `--replicas 1` and 3 ps tasks (ps:i's standby in another task), so
# a lost ps process costs no rollback: its shards' standbys take over. A killed ps process is
# not restarted (a new process of the task could not take its shards back: they are served
# elsewhere now), so a run loses at most 2 of its 3 ps tasks. A ps is killed or frozen only
# while every shard has a copy in another live task: once the previous ps loss was detected
# (a `failover` event) and every fail-over and lost standby was answered by a `rereplicated`
# event; otherwise the scenario picks a worker. Two at once are never two ps. The JSON (default
# build/bench/chaos_processes_replicas.json) counts fail-overs and rollbacks (a ps recovery
# that lost clocks): 0 rollbacks is the goal.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=20 seed=1 budget=900 out="$root/build/bench/chaos_processes.json"
replicas=0
if [ "${1:-}" = --replicas ]; then shift; replicas=1; out="$root/build/bench/chaos_processes_replicas.json"; fi
. "$root/scripts/chaos_options.sh"
parse_chaos_options "$@"
bin="${ACTORPS:-$root/build/actorps}"
[[ -x $bin ]] || { echo "chaos.sh: $bin is missing: run scripts/setup.sh first" >&2; exit 1; }
python=$(command -v /usr/bin/python3 || command -v python3)

tmp="$(mktemp -d)"
supervisors=()
cleanup() {
  for p in "${supervisors[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$tmp"/*/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$(dirname "$out")"
RANDOM=$seed
tasks=(ps:0 ps:1 worker:0 worker:1)
((replicas == 0)) || tasks=(ps:0 ps:1 ps:2 worker:0 worker:1)
ps_tasks=$((replicas ? 3 : 2))
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cluster() {  # cluster FILE: free ports for chief, $ps_tasks ps, 2 workers, evaluator (ps port + 1 free)
  "$python" - "$1" "$ps_tasks" $("$python" "$root/scripts/free_port_pairs.py" $((ps_tasks + 4))) <<'PY'
import json, sys
P = int(sys.argv[2])
a = [f"127.0.0.1:{p}" for p in sys.argv[3:]]
json.dump({"chief": a[:1], "ps": a[1:1 + P], "worker": a[1 + P:3 + P], "evaluator": a[3 + P:]},
          open(sys.argv[1], "w"))
PY
}
tf_config() {  # tf_config CLUSTER TYPE INDEX
  "$python" -c 'import json,sys; print(json.dumps({"cluster": json.load(open(sys.argv[1])),
    "task": {"type": sys.argv[2], "index": int(sys.argv[3])}}))' "$1" "$2" "$3"
}

# supervise RUN TASK FLAGS...: runs the task, and again with the same command after a
# retryable exit while the chief runs; one line per process in RUN/exits.
supervise() {
  local run=$1 task=$2; shift 2
  local config; config=$(tf_config "$run/c.json" "${task%%:*}" "${task##*:}")
  while :; do
    local started; started=$(now_ms)
    TF_CONFIG=$config "$bin" run --insecure "$@" >> "$run/$task.log" 2>&1 &
    local pid=$!
    echo "$pid" > "$run/$task.pid"
    local status=0; wait "$pid" || status=$?
    echo "{\"task\":\"$task\",\"started_ms\":$started,\"ended_ms\":$(now_ms),\"status\":$status}" >> "$run/exits"
    [ -f "$run/chief.exited" ] && break
    [[ $replicas == 1 && $task == ps:* ]] && break  # its shards are served by their standbys
    case $status in 137|138|143) ;; *) break ;; esac
  done
}

events_of() { grep -c "\"event\":\"$2\"" "$1/m.jsonl" || true; }  # events_of RUN EVENT

# protected RUN FAILOVERS: (--replicas) whether a ps may be lost now: at least FAILOVERS fail-overs
# happened (the previous ps loss was detected; waited for, bounded) and every fail-over and
# lost standby has its standby built again (waited for, bounded: none comes once no other ps
# task is left).
protected() {
  local run=$1 want=$2 t
  for ((t = 0; t < 50; ++t)); do
    local f s r
    f=$(events_of "$run" failover) s=$(events_of "$run" standby_lost) r=$(events_of "$run" rereplicated)
    ((f >= want && f + s == r)) && return 0
    sleep 0.1  # the chaos driver's own pacing, as its other pauses
  done
  return 1
}

# chaos RUN: once training runs, 1 to 3 times at a random moment, a kill, two, or a freeze.
chaos() {
  local run=$1 pause ps_lost=() failovers=0
  local n=${#tasks[@]}
  RANDOM=$((seed * 1000 + r))  # this runs in a subshell, which bash 5.1+ reseeds: the plan from SEED
  grep -q -m1 '"event":"train"' < <(timeout 60 tail -n +1 -F "$run/m.jsonl" 2>/dev/null) || return 0
  for ((k = 0; k < 1 + RANDOM % 3; ++k)); do
    pause=$((RANDOM % 2500))
    sleep "$((pause / 1000)).$(printf %03d $((pause % 1000)))"  # the moment: the scenario
    [ -f "$run/chief.exited" ] && return 0
    local i=$((RANDOM % n)); local a=${tasks[i]} b=${tasks[(i + 1 + RANDOM % (n - 1)) % n]}
    local scenario=$((RANDOM % 4))
    ((scenario == 2)) || b=  # only "two at once" has a second one
    if ((replicas)); then
      # a ps only while every shard keeps a copy; never two ps at once
      if [[ $a == ps:* ]] && { [[ " ${ps_lost[*]} " == *" $a "* ]] || ! protected "$run" "$failovers"; }; then
        a=worker:$((RANDOM % 2))
      fi
      [[ $a == ps:* && $b == ps:* ]] && b=worker:$((RANDOM % 2))
      if [[ $b == ps:* ]] && { [[ " ${ps_lost[*]} " == *" $b "* ]] || ! protected "$run" "$failovers"; }; then
        b=worker:$((RANDOM % 2))
      fi
      [[ -n $b && $b == "$a" ]] && b=worker:$((1 - ${a##*:}))
      [[ $a == ps:* ]] && { ps_lost+=("$a"); failovers=$(($(events_of "$run" failover) + 1)); }
      [[ $b == ps:* ]] && { ps_lost+=("$b"); failovers=$(($(events_of "$run" failover) + 1)); }
    fi
    case $scenario in
      0|1) echo "kill $a" >> "$run/plan"; kill -9 "$(cat "$run/$a.pid")" 2>/dev/null || true ;;
      2) echo "kill $a $b" >> "$run/plan"
         kill -9 "$(cat "$run/$a.pid")" "$(cat "$run/$b.pid")" 2>/dev/null || true ;;
      3) local pid; pid=$(cat "$run/$a.pid"); pause=$((1000 + RANDOM % 2000))
         echo "freeze $a ${pause}ms" >> "$run/plan"
         kill -STOP "$pid" 2>/dev/null || true
         sleep "$((pause / 1000)).$(printf %03d $((pause % 1000)))"
         kill -CONT "$pid" 2>/dev/null || true ;;
    esac
  done
}

for ((r = 1; r <= runs; ++r)); do
  left=$((budget - SECONDS))
  if ((left <= 1)); then echo "chaos.sh: the ${budget} s budget is spent after $((r - 1)) runs" >&2; break; fi
  run="$tmp/run$r"; mkdir -p "$run"; : > "$run/plan"; : > "$run/exits"; : > "$run/m.jsonl"
  cluster "$run/c.json"
  flags=(--connect-timeout 20 --heartbeat-ms 200 --peer-timeout-ms 2000 --dataset synthetic
         --model 784-64-10 --steps 500 --seed "$r" --slow worker:0=3 --slow worker:1=3
         --no-progress --checkpoint-dir "$run/ckpt" --checkpoint-every 50 --resume auto
         --replicas "$replicas")
  supervisors=()
  for t in "${tasks[@]}" evaluator:0; do supervise "$run" "$t" "${flags[@]}" 2>/dev/null & supervisors+=($!); done
  chief_start=$(now_ms)
  set +e
  TF_CONFIG=$(tf_config "$run/c.json" chief 0) timeout -k 10 $((left < 120 ? left : 120)) \
    "$bin" run --insecure "${flags[@]}" --metrics "$run/m.jsonl" > "$run/chief.log" 2>&1 &
  chief=$!
  chaos "$run" &
  chaos_pid=$!
  wait "$chief"; status=$?
  chief_end=$(now_ms)
  touch "$run/chief.exited"
  kill "$chaos_pid" 2>/dev/null; wait "$chaos_pid" 2>/dev/null
  # every task exits by itself once the chief has stopped it (bounded: a task still waiting
  # for a chief that is gone is deleted, as Kubernetes deletes a finished job's pods)
  for t in "${tasks[@]}" evaluator:0; do
    pid=$(cat "$run/$t.pid"); kill -CONT "$pid" 2>/dev/null
    timeout 25 tail --pid="$pid" -f /dev/null || kill -TERM "$pid" 2>/dev/null
  done
  for p in "${supervisors[@]}"; do wait "$p"; done
  set -e
  "$python" - "$run" "$r" "$status" "$chief_start" "$chief_end" "$replicas" >> "$tmp/runs.jsonl" <<'PY'
import json, sys
run, r, status, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
replicas = sys.argv[6] == "1"
events = []
for line in open(run + "/m.jsonl"):
    try: events.append(json.loads(line))
    except ValueError: pass
summary = next((e for e in events if e["event"] == "summary"), None)
exits = [json.loads(l) for l in open(run + "/exits")]
last = {}
for e in exits: last[e["task"]] = e
# a process started in the last 3 s of the chief may find it gone (138)
ending = end - 3000
wrong = []
for e in exits:
    final = last[e["task"]] is e
    ok = {0} if final else {137, 138}
    if final and replicas and e["task"].startswith("ps:"): ok |= {137, 138}  # not restarted
    if final and e["started_ms"] >= ending: ok |= {138}
    if e["status"] not in ok:
        wrong.append("%s exited %d%s" % (e["task"], e["status"], " (its last process)" if final else ""))
cause = None
if status != 0 or summary is None:
    lines = [l.strip() for l in open(run + "/chief.log") if "[chief]" in l]
    cause = "chief exited %d: %s" % (status, lines[-1] if lines else "no log")
elif wrong:
    cause = "; ".join(wrong)
print(json.dumps({"run": r, "plan": [l.strip() for l in open(run + "/plan")], "chief_status": status,
                  "completed": cause is None, "cause": cause,
                  "processes": len(exits), "restarts": len(exits) - len(last),
                  "failures": summary["failures"] if summary else None,
                  "recoveries": summary["recoveries"] if summary else None,
                  "final_test_accuracy": summary["final_test_accuracy"] if summary else None,
                  "recovery_ms": [{"role": e["role"], "ms": e["ms"]} for e in events if e["event"] == "recovery"],
                  "failovers": sum(e["event"] == "failover" for e in events),
                  "failover_ms": [e["ms"] for e in events if e["event"] == "failover"],
                  "rereplications": sum(e["event"] == "rereplicated" for e in events),
                  # a worker whose new process could not start its role: the run went on without it
                  "workers_given_up": sum("could not be replaced" in l for l in open(run + "/chief.log")),
                  # a shard recovered by going back to a checkpoint: clocks were lost
                  "rollbacks": sum(e["event"] == "recovery" and e["role"] == "ps" and e["lost_clocks"] > 0
                                   for e in events),
                  "seconds": (end - start) / 1000}))
PY
  line=$(tail -n 1 "$tmp/runs.jsonl")
  echo "chaos.sh: run $r/$runs: $(echo "$line" | "$python" -c 'import json,sys; d=json.load(sys.stdin); print(" / ".join(d["plan"]) or "no kill", "->", "completed" if d["completed"] else "FAILED: " + d["cause"], "(%.1f s)" % d["seconds"])')" >&2
  if [ -n "${KEEP:-}" ] || ! echo "$line" | grep -q '"completed": true'; then
    cp -r "$run" "$(dirname "$out")/chaos_run$r" 2>/dev/null || true  # kept to explain it
  fi
  rm -rf "$run"
done

"$python" - "$tmp/runs.jsonl" "$out" "$seed" "$replicas" <<'PY'
import json, statistics, sys
runs_path, out_path, seed, replicas = sys.argv[1:]
replicas = int(replicas)
runs = [json.loads(l) for l in open(runs_path)]
ms = [r_["ms"] for r in runs for r_ in r["recovery_ms"]]
by_role = {}
for r in runs:
    for x in r["recovery_ms"]: by_role.setdefault(x["role"], []).append(x["ms"])
accs = [r["final_test_accuracy"] for r in runs if r["completed"] and r["final_test_accuracy"] is not None]
def stats(v):
    return {"count": len(v), "median_ms": statistics.median(v) if v else None, "max_ms": max(v) if v else None}
fo_ms = [m for r in runs for m in r["failover_ms"]]
result = {"bench": "chaos_processes", "seed": int(seed), "replicas": replicas, "runs": len(runs),
          "completed": sum(r["completed"] for r in runs),
          "failovers": sum(r["failovers"] for r in runs),
          "failover_ms": {"count": len(fo_ms), "median": statistics.median(fo_ms) if fo_ms else None,
                          "max": max(fo_ms) if fo_ms else None},
          "rereplications": sum(r["rereplications"] for r in runs),
          "rollbacks": sum(r["rollbacks"] for r in runs),
          "workers_given_up": sum(r["workers_given_up"] for r in runs),
          "failed": [{"run": r["run"], "plan": r["plan"], "cause": r["cause"]} for r in runs if not r["completed"]],
          "restarts": sum(r["restarts"] for r in runs),
          "recovery": dict(stats(ms), by_role={k: stats(v) for k, v in by_role.items()}),
          "final_test_accuracy": {"min": min(accs) if accs else None, "median": statistics.median(accs) if accs else None,
                                  "max": max(accs) if accs else None},
          "seconds": sum(r["seconds"] for r in runs), "detail": runs}
json.dump(result, open(out_path, "w"), indent=1)
print("completed %d of %d runs (%d process restarts)" % (result["completed"], len(runs), result["restarts"]))
if replicas:
    print("fail-overs %d (detection to serving: median %s ms, max %s ms), standbys rebuilt %d, rollbacks %d" % (
          result["failovers"], result["failover_ms"]["median"], result["failover_ms"]["max"],
          result["rereplications"], result["rollbacks"]))
    print("workers whose new process could not start (the run went on without them): %d" % result["workers_given_up"])
for f in result["failed"]: print("  run %d (%s): %s" % (f["run"], " / ".join(f["plan"]), f["cause"]))
if ms: print("recovery: median %.1f ms, max %.1f ms over %d" % (statistics.median(ms), max(ms), len(ms)))
for role, v in by_role.items(): print("  %-9s median %7.1f ms, max %7.1f ms over %d" % (role, statistics.median(v), max(v), len(v)))
if accs: print("final test accuracy: min %.4f, median %.4f, max %.4f" % (min(accs), statistics.median(accs), max(accs)))
print("JSON: " + out_path)
sys.exit(0 if result["completed"] == len(runs) and (not replicas or result["rollbacks"] == 0) else 1)
PY
