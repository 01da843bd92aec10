#!/usr/bin/env bash
# The default Fashion-MNIST run as one process per task (scripts/launch_local.sh --insecure --ps 2
# --workers 2) against the same run inside one process (actorps simulate --ps 2 --workers 2),
# with the same chief flags: samples/s and final test accuracy (the chief's summary), and the CPU
# seconds (user + sys), context switches (the wake-ups) and peak resident memory of every
# process of the run, from /usr/bin/time around each task (a wrapper given to launch_local.sh
# --binary) and simulate. The process version runs with its workers on shared memory
# (--data-link shm, what auto picks on one host) and on the local socket alone (--data-link
# socket). The three are alternated, ROUNDS rounds (default 3), so that
# the machine's load spreads over all of them; the load average is recorded with each run.
# Why the CPU seconds: on a machine of few cores, a run that needs more CPU than simulate for the
# same samples cannot reach simulate's samples/s (target: processes >= 0.9x simulate).
# With -B OTHER_BUILD_DIR (a build of another commit) each round also runs that build's simulate
# and shared-memory runs, and the summary compares the two builds in the same window.
# usage: scripts/bench/processes_vs_simulate.sh [-o FILE] [-r ROUNDS] [-b BUILD_DIR] [-B OTHER_BUILD_DIR] [-- chief flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
out=build/bench/processes_vs_simulate.json rounds=3 build=build other=""
while getopts "o:r:b:B:" opt; do
  case $opt in o) out=$OPTARG ;; r) rounds=$OPTARG ;; b) build=$OPTARG ;; B) other=$OPTARG ;;
    *) sed -n 15p "$0" >&2; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "processes_vs_simulate.sh: -r must be a positive number" >&2; exit 2; }
binary=$(realpath "$build/actorps")
[ -x "$binary" ] || { echo "$binary is missing: run scripts/setup.sh first" >&2; exit 2; }
kinds="simulate shm socket" other_binary=""
if [ -n "$other" ]; then
  other_binary=$(realpath "$other/actorps")
  [ -x "$other_binary" ] || { echo "-B: $other_binary is missing" >&2; exit 2; }
  # The other build's processes start with its own tree's launcher, which knows its flags (a
  # build from before TLS was the default has no --insecure: it runs without TLS anyway).
  other_tree=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$other/CMakeCache.txt" 2>/dev/null)
  other_launch=$other_tree/scripts/launch_local.sh
  [ -x "$other_launch" ] || other_launch=scripts/launch_local.sh
  other_insecure=--insecure
  grep -q -- --insecure "$other_launch" || other_insecure=
  kinds="$kinds other_simulate other_shm"
fi
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every task of a launch_local.sh run goes through this wrapper: its CPU time lands in a file of
# its own under the run's directory (CPU_DIR), named after its role (ps, worker, evaluator,
# chief: the first argument), read once the run is over.
for b in timed:"$binary" other_timed:"$other_binary"; do
  cat > "$tmp/${b%%:*}" <<EOF
#!/bin/sh
exec /usr/bin/time -f "%U %S %w %c %M" -o "\$(mktemp "\$CPU_DIR/cpu.\$1.XXXXXX")" "${b#*:}" "\$@"
EOF
  chmod +x "$tmp/${b%%:*}"
done

for ((round = 1; round <= rounds; round++)); do
  for kind in $kinds; do
    run="$tmp/$kind-$round"
    mkdir -p "$run"
    uptime > "$run/load"
    case $kind in
      simulate|other_simulate)
        b=$binary; [ "$kind" = other_simulate ] && b=$other_binary
        /usr/bin/time -f "%U %S %w %c %M" -o "$run/cpu.simulate" "$b" simulate --ps 2 --workers 2 "$@" \
          > "$run/log" 2>&1 ;;
      *)
        w=$tmp/timed launch=scripts/launch_local.sh insecure=--insecure
        [ "$kind" = other_shm ] && w=$tmp/other_timed launch=$other_launch insecure=$other_insecure
        CPU_DIR="$run" "$launch" $insecure --ps 2 --workers 2 --data-link "${kind#other_}" \
          --binary "$w" -- "$@" > "$run/log" 2>&1 ;;
    esac
    echo "round $round $kind: $(grep -Eo '= [0-9]+ samples/s' "$run/log" | tail -1)" >&2
  done
done

"$python" - "$tmp" "$out" "$rounds" "$*" "$kinds" "$other" <<'PY'
import glob, json, os, re, statistics, sys
tmp, out, rounds, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
kinds, other = sys.argv[5].split(), sys.argv[6]
runs = []
for r in range(1, rounds + 1):
    for kind in kinds:
        d = os.path.join(tmp, f"{kind}-{r}")
        log = open(os.path.join(d, "log")).read()
        rate = re.findall(r"= (\d+) samples/s", log)
        acc = re.findall(r"final test accuracy ([0-9.]+)", log)
        if not rate or not acc:
            sys.exit(f"round {r} {kind}: no summary in its output:\n{log[-2000:]}")
        cpu, switches, by_role, rss_kb = 0.0, 0, {}, 0
        for f in glob.glob(os.path.join(d, "cpu.*")):
            # the last line is "USER SYS VOLUNTARY INVOLUNTARY MAXRSS_KB" (context switches;
            # GNU time writes a line before it for a failed command)
            user, sys_, vol, invol, maxrss = open(f).read().split("\n")[-2].split()
            cpu += float(user) + float(sys_)
            switches += int(vol) + int(invol)
            rss_kb += int(maxrss)
            role = os.path.basename(f).split(".")[1] if f.count(".") >= 2 else "simulate"
            by_role[role] = by_role.get(role, 0.0) + float(user) + float(sys_)
        load = float(re.search(r"load average: ([0-9.]+)", open(os.path.join(d, "load")).read()).group(1))
        runs.append({"round": r, "kind": kind, "samples_per_s": float(rate[-1]),
                     "final_test_accuracy": float(acc[-1]), "cpu_s": cpu,
                     "context_switches": switches, "cpu_s_by_role": by_role,
                     "peak_rss_mib_summed": rss_kb / 1024,
                     "processes_timed": len(glob.glob(os.path.join(d, "cpu.*"))),
                     "load_average_1min_before": load})
med = lambda kind, key: statistics.median(x[key] for x in runs if x["kind"] == kind)
summary = {kind: {"samples_per_s": med(kind, "samples_per_s"),
                  "final_test_accuracy": med(kind, "final_test_accuracy"),
                  "cpu_s": med(kind, "cpu_s"),
                  "context_switches": med(kind, "context_switches"),
                  "peak_rss_mib_summed": med(kind, "peak_rss_mib_summed"),
                  "cpu_s_by_role": {role: statistics.median(x["cpu_s_by_role"].get(role, 0.0)
                                                            for x in runs if x["kind"] == kind)
                                    for role in sorted({r for x in runs if x["kind"] == kind
                                                        for r in x["cpu_s_by_role"]})}}
           for kind in kinds}
def versus(kind, ref):
    # per round (the runs of one round are next to each other in time), then the median
    return [(a, b) for a in runs if a["kind"] == kind for b in runs
            if b["kind"] == ref and b["round"] == a["round"]]
for kind in [k for k in kinds if k not in ("simulate", "other_simulate")]:
    per = versus(kind, "other_simulate" if kind.startswith("other_") else "simulate")
    summary[kind]["ratio_samples_per_s_to_simulate"] = statistics.median(
        a["samples_per_s"] / b["samples_per_s"] for a, b in per)
    summary[kind]["ratio_cpu_s_to_simulate"] = statistics.median(a["cpu_s"] / b["cpu_s"] for a, b in per)
if other:
    for kind, ref in (("shm", "other_shm"), ("simulate", "other_simulate")):
        summary[kind]["ratio_samples_per_s_to_" + ref] = statistics.median(
            a["samples_per_s"] / b["samples_per_s"] for a, b in versus(kind, ref))
        summary[kind]["ratio_cpu_s_to_" + ref] = statistics.median(
            a["cpu_s"] / b["cpu_s"] for a, b in versus(kind, ref))
result = {"bench": "processes_vs_simulate",
          "what": "launch_local.sh --insecure --ps 2 --workers 2 (one process per task: 2 ps, 2 workers, "
                  "evaluator, chief) with --data-link shm and socket, against actorps simulate "
                  "--ps 2 --workers 2; cpu_s: user+sys of every process of the run (cpu_s_by_role: "
                  "summed over the processes of each role, medians per role); context_switches: voluntary + "
                  "involuntary, every process of the run; peak_rss_mib_summed: each process's peak "
                  "resident memory, summed over the run's processes; ratios per "
                  "round, then the median; target: samples/s ratio >= 0.9",
          "chief_flags": flags, "cores": os.cpu_count(), "rounds": rounds,
          "other_build": other or None,
          "summary": summary, "runs": runs, "load_average_after": os.getloadavg()[0]}
json.dump(result, open(out, "w"), indent=1)
for kind in kinds:
    s = summary[kind]
    extra = (f"  {s['ratio_samples_per_s_to_simulate']:.2f}x simulate's samples/s, "
             f"{s['ratio_cpu_s_to_simulate']:.2f}x its CPU") if "ratio_samples_per_s_to_simulate" in s else ""
    for ref in ("other_shm", "other_simulate"):
        if "ratio_samples_per_s_to_" + ref in s:
            extra += f"; {s['ratio_samples_per_s_to_' + ref]:.2f}x the other build's samples/s"
    print(f"{kind:>8}: {s['samples_per_s']:8.0f} samples/s, accuracy {s['final_test_accuracy']:.4f}, "
          f"CPU {s['cpu_s']:6.2f} s, {s['context_switches']:.0f} context switches, "
          f"{s['peak_rss_mib_summed']:.0f} MiB peak resident (summed){extra}")
    if len(s["cpu_s_by_role"]) > 1:
        print(" " * 10 + "CPU by role: " + ", ".join(f"{r} {v:.2f} s" for r, v in s["cpu_s_by_role"].items()))
print(f"-> {out}")
PY
