#!/usr/bin/env bash
# Fuzzes one target for longer than the suite does, by hand (the suite gives each 20 s):
# builds the fuzz tree in build/fuzz if needed, keeps a working corpus outside the repository
# (it grows run after run), and at the end lists what it found: each input that crashed, leaked,
# hung or hit undefined behaviour, with the first lines of its report. Fix the decoder, then
# commit the input under tests/fuzz/regressions/TARGET/ (the suite replays every one).
# Usage: scripts/fuzz.sh TARGET [SECONDS]      (default 600; TARGET: wire, link_frame,
#        checkpoint, cluster_spec, model_file, prediction_input, text_lines)
#   ACTORPS_FUZZ_WORK   where corpora and findings live (default ~/.cache/actorps-fuzz)
# e.g.   nice -n 19 scripts/fuzz.sh wire 600
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
target=$1 seconds=${2:-600}
fuzzer=build/fuzz/fuzz_$target
[ -d "tests/fuzz/corpus/$target" ] || { echo "fuzz: no target '$target' (see tests/fuzz/corpus/)" >&2; exit 2; }
tests/fuzz/build_fuzz_tree.sh "$PWD" build/fuzz >/dev/null || exit 1

work=${ACTORPS_FUZZ_WORK:-$HOME/.cache/actorps-fuzz}/$target
mkdir -p "$work/corpus" "$work/findings"
cp -n "tests/fuzz/corpus/$target"/* "$work/corpus/"
before=$(ls "$work/findings" | wc -l)
options=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$work/findings/" -print_final_stats=1
         -max_total_time="$seconds")
[ -f "tests/fuzz/dict/$target.dict" ] && options+=(-dict="tests/fuzz/dict/$target.dict")
# -fork: a finding does not end the run; each one is kept and the fuzzing goes on.
"$fuzzer" "${options[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  "$work/corpus" >"$work/last.log" 2>&1
rc=$?
grep -E "^#[0-9]+: cov" "$work/last.log" | tail -n 1  # executions, coverage, crashes so far
echo "fuzz: $target ran ${seconds} s (exit $rc); corpus $(ls "$work/corpus" | wc -l) inputs in $work/corpus"
found=0
for f in "$work/findings"/*; do
  [ -e "$f" ] || continue
  found=$((found + 1))
  echo "--- $(basename "$f") ($(stat -c %s "$f") bytes)"
  "$fuzzer" "$f" 2>&1 | grep -E "ERROR|SUMMARY|runtime error|terminate|what\(\)|#[0-9] 0x" | head -n 8
done
echo "fuzz: $target: $found finding(s) in $work/findings ($((found - before)) new)"
