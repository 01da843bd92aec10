#!/usr/bin/env bash
# What one actorps process costs before it does any work, the price every task of a cluster run
# one process per task pays (launch_local.sh, TF_CONFIG, Kubernetes): `actorps --help` start to
# exit (wall and CPU seconds, minor page faults, peak resident memory: medians of RUNS runs), and
# a ps task idle before its chief exists (resident memory, anonymous and file-backed, from
# /proc/PID/status once its data link listens). With -B OTHER_BUILD_DIR the same for that build's
# actorps, alternated run by run, and the ratios. Writes one JSON file.
# usage: scripts/bench/process_footprint.sh [-o FILE] [-n RUNS] [-b BUILD_DIR] [-B OTHER_BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/process_footprint.json runs=9 build=build other=""
while getopts "o:n:b:B:" opt; do
  case $opt in o) out=$OPTARG ;; n) runs=$OPTARG ;; b) build=$OPTARG ;; B) other=$OPTARG ;;
    *) sed -n 8p "$0" >&2; exit 2 ;; esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "process_footprint.sh: -n must be a positive number" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
. "$(dirname "$0")/bench_lib.sh"  # free_port
builds=("$build") && [ -n "$other" ] && builds+=("$other")
for b in "${builds[@]}"; do
  [ -x "$b/actorps" ] || { echo "$b/actorps is missing: run scripts/setup.sh first" >&2; exit 2; }
done
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
ps_pid=""
trap '[ -n "$ps_pid" ] && kill "$ps_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

for ((run = 1; run <= runs; run++)); do
  for i in "${!builds[@]}"; do
    /usr/bin/time -f "%e %U %S %R %M" -o "$tmp/start-$i-$run" "${builds[$i]}/actorps" --help > /dev/null
  done
done

# An idle ps task: its chief's address has nothing behind it, so it waits (retrying) after
# opening its data link; it is measured once it says so, then stopped.
for i in "${!builds[@]}"; do
  chief=$(free_port) ps=$(free_port) worker=$(free_port)
  export TF_CONFIG="{\"cluster\":{\"chief\":[\"127.0.0.1:$chief\"],\"ps\":[\"127.0.0.1:$ps\"],\"worker\":[\"127.0.0.1:$worker\"]},\"task\":{\"type\":\"ps\",\"index\":0}}"
  log=$tmp/ps-$i.log
  : > "$log"
  insecure=(); "${builds[$i]}/actorps" run --help | grep -q -- --insecure && insecure=(--insecure)
  "${builds[$i]}/actorps" run ${insecure[@]+"${insecure[@]}"} --data-port "$(free_port)" > "$log" 2>&1 & ps_pid=$!
  # (tail -f wakes on each write of the log, no polling loop of ours; it ends with the task)
  grep -q -m1 "data link on" < <(timeout 60 tail -n +1 -f --pid="$ps_pid" "$log") \
    || { echo "the ps task did not open its data link:"; cat "$log"; exit 1; } >&2
  grep -E "^(VmRSS|RssAnon|RssFile):" "/proc/$ps_pid/status" > "$tmp/ps-$i.status"
  kill "$ps_pid"; wait "$ps_pid" 2>/dev/null || true; ps_pid=""
done
unset TF_CONFIG

"$python" - "$tmp" "$out" "$runs" "${builds[@]}" <<'PY'
import json, os, statistics, sys
tmp, out, runs, builds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
result = {"bench": "process_footprint", "runs": runs, "builds": {}}
for i, b in enumerate(builds):
    rows = [open(os.path.join(tmp, f"start-{i}-{r}")).read().split() for r in range(1, runs + 1)]
    med = lambda k: statistics.median(float(x[k]) for x in rows)
    status = dict(line.split(":") for line in open(os.path.join(tmp, f"ps-{i}.status")))
    kb = lambda key: int(status[key].split()[0])
    result["builds"][b] = {
        "start_wall_s": med(0), "start_cpu_s": med(1) + med(2), "start_minor_faults": med(3),
        "start_max_rss_kb": med(4),
        "idle_ps_rss_kb": kb("VmRSS"), "idle_ps_anon_kb": kb("RssAnon"), "idle_ps_file_kb": kb("RssFile")}
if len(builds) == 2:
    a, b = (result["builds"][x] for x in builds)
    result["ratio_build_to_other"] = {k: (a[k] / b[k] if b[k] else None) for k in a}
json.dump(result, open(out, "w"), indent=1)
for b, x in result["builds"].items():
    print(f"{b}: actorps --help {x['start_wall_s']:.3f} s, CPU {x['start_cpu_s']:.3f} s, "
          f"{x['start_minor_faults']:.0f} faults, peak {x['start_max_rss_kb'] / 1024:.1f} MiB; "
          f"idle ps task {x['idle_ps_rss_kb'] / 1024:.1f} MiB resident "
          f"({x['idle_ps_anon_kb'] / 1024:.1f} anonymous, {x['idle_ps_file_kb'] / 1024:.1f} file)")
print(f"-> {out}")
PY
