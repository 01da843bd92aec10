#!/usr/bin/env bash
# README stays a user's guide and the measurement log stays labelled by what it measures:
# 1. README.md has at most 400 lines;
# 2. it cites no design document a user does not have ("DESIGN §N");
# 3. no tracked result file under scripts/bench/results/ is named by the occasion that produced
#    it (a `_sNN` label) rather than by what it measures.
# usage: tests/readme_house_rules_test.sh [REPOSITORY_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
readme=$root/README.md
failed=0
lines=$(wc -l < "$readme")
if [ "$lines" -gt 400 ]; then
  echo "README.md has $lines lines, more than 400: move detail to where it belongs" \
       "(scripts/bench/README.md for measurements, \`actorps <command> --help\` for flags)"
  failed=1
fi
if cites=$(grep -n 'DESIGN §' "$readme"); then
  echo "README.md cites a design document users do not have:"
  echo "$cites"
  failed=1
fi
results=$(git -C "$root" ls-files -- scripts/bench/results) \
  || { echo "cannot list the tracked files of $root (not a git checkout?)"; exit 1; }
[ -n "$results" ] || { echo "no tracked file under scripts/bench/results/"; exit 1; }
if labelled=$(grep -E '_s[0-9]+' <<< "$results"); then
  echo "result files labelled by an occasion, not by what they measure:"
  echo "$labelled"
  failed=1
fi
[ "$failed" = 0 ] || exit 1
echo "README.md: $lines lines, no DESIGN citation; scripts/bench/results/ names what it measures"
