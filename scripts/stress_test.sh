#!/usr/bin/env bash
# Runs one test script RUNS times while HOGS processes keep CPUs busy, as a loaded CI machine
# does, and counts the failures: what a race between processes looks like before CI finds it
# (before their fixes: multiprocess_k8s failed 11 of 36 such runs, multiprocess_restarts 5 of 10).
# Each failing run's output is kept and named.
# usage: scripts/stress_test.sh [-n RUNS] [-l HOGS] TEST_SCRIPT [ARGS...]
set -euo pipefail
runs=10 hogs=2
while getopts "n:l:" opt; do
  case $opt in n) runs=$OPTARG ;; l) hogs=$OPTARG ;; *) sed -n 6p "$0" >&2; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 6p "$0" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "stress_test.sh: -n must be a positive number" >&2; exit 2; }
[[ $hogs =~ ^[0-9]+$ ]] || { echo "stress_test.sh: -l must be a number" >&2; exit 2; }
[ -f "$1" ] || { echo "stress_test.sh: $1 is no file" >&2; exit 2; }
out=$(mktemp -d /tmp/actorps-stress.XXXXXX)
hog_pids=()
stop_hogs() { for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_hogs EXIT
# The load: busy loops that never wait (yes into /dev/null), one per CPU to be taken away.
for ((i = 0; i < hogs; i++)); do yes > /dev/null & hog_pids+=($!); done
failed=0
for ((r = 1; r <= runs; r++)); do
  if bash "$@" > "$out/run$r.log" 2>&1; then
    rm "$out/run$r.log"
  else
    failed=$((failed + 1))
    echo "run $r failed: $(grep -m1 '^FAIL' "$out/run$r.log" || tail -n 1 "$out/run$r.log") ($out/run$r.log)"
  fi
done
echo "$1: $failed of $runs runs failed with $hogs CPU hogs"
[ "$failed" = 0 ] && rmdir "$out"
[ "$failed" = 0 ]
