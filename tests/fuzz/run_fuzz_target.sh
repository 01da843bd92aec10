#!/usr/bin/env bash
# One fuzz target as the suite runs it: every committed regression input once, then SECONDS
# of fuzzing from a copy of its seed corpus (the committed corpus is never written). A crash,
# a leak, an UndefinedBehaviorSanitizer report or an input that runs past 10 s fails it; the
# input that did it is kept in FINDINGS_DIR and named in the output, to be committed as a
# regression input once the decoder is fixed.
# Usage: tests/fuzz/run_fuzz_target.sh FUZZER CORPUS_DIR REGRESSIONS_DIR SECONDS FINDINGS_DIR
set -uo pipefail
if [ $# -ne 5 ]; then
  echo "usage: $0 FUZZER CORPUS_DIR REGRESSIONS_DIR SECONDS FINDINGS_DIR" >&2
  exit 2
fi
fuzzer=$1 corpus=$2 regressions=$3 seconds=$4 findings=$5
name=$(basename "$fuzzer")

if [ ! -x "$fuzzer" ]; then
  echo "$name: FAILED: $fuzzer was not built: see the fuzz_build test (it needs Debian's clang" \
       "and libclang-rt-14-dev, which scripts/setup.sh installs)" >&2
  exit 1
fi
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "$name: FAILED: no seed corpus in $corpus" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$findings"
# libFuzzer's own limits: 10 s per input, 2 GiB of memory, 1 GiB in one allocation (no decoder
# asks that much for a small input: a header trusted too early); leaks are reported at exit.
options=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$findings/" -print_final_stats=1)

if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
  count=$(ls -A "$regressions" | wc -l)
  if ! "$fuzzer" "${options[@]}" "$regressions"/* >"$work/replay.log" 2>&1; then
    tail -n 60 "$work/replay.log" >&2
    echo "$name: FAILED: a committed regression input crashes again (above)" >&2
    exit 1
  fi
  echo "$name: $count regression input(s) replayed, none fails"
fi

cp -r "$corpus" "$work/corpus"
dict=$(dirname "$corpus")/../dict/${name#fuzz_}.dict
[ -f "$dict" ] && options+=(-dict="$dict")
"$fuzzer" "${options[@]}" -max_total_time="$seconds" "$work/corpus" >"$work/fuzz.log" 2>&1
rc=$?
grep -E "^(stat::|#[0-9]+.*DONE)" "$work/fuzz.log"
if [ $rc -ne 0 ]; then
  tail -n 80 "$work/fuzz.log" >&2
  found=$(grep -o "Test unit written to .*" "$work/fuzz.log" | sed 's/Test unit written to //')
  echo "$name: FAILED (exit $rc): the input is ${found:-not saved}; reproduce with: $fuzzer $found" >&2
  exit 1
fi
echo "$name: ${seconds} s of fuzzing found nothing"
