#!/usr/bin/env bash
# --tensorboard against an independent reader (tests/tfevents_check.py: every record's CRCs,
# and test/accuracy, test/loss, test/auc at every evaluation clock with the metrics file's value):
#   simulate   an MLP run, one with a shard's fail-over (events/failovers) and a dlrm (CTR)
#              run with --gauc-group and --slice-auc (test/gauc, test/calibration,
#              test/slice_auc/KEY) in one process; a directory that cannot be created is refused naming the
#              flag (exit 2)
#   processes  a cluster of one process per task (scripts/launch_local.sh), the chief writing
#   resume     a run resumed from its checkpoint adds a second file, its steps continuing from
#              the resumed clock
# usage: tests/tensorboard_test.sh simulate|processes|resume [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
part=$1
bin=${2:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-tb.XXXXXX)
. "$root/tests/cluster_test_lib.sh"
check() { "$python" "$root/tests/tfevents_check.py" "$@" || fail "the event files do not hold the run: $*"; }

case $part in
simulate)
  "$bin" simulate --dataset synthetic --model 784-32-10 --steps 120 --eval-every 25 --no-progress \
    --metrics "$dir/m.jsonl" --tensorboard "$dir/tb" > "$dir/run.log" 2>&1 || fail "simulate failed"
  check "$dir/tb" "$dir/m.jsonl"
  # a shard lost and its standby promoted: events/failovers and events/recoveries
  "$bin" simulate --dataset synthetic --model 784-32-10 --steps 120 --eval-every 40 --no-progress \
    --replicas 1 --kill ps:0@clock=50 --metrics "$dir/f.jsonl" --tensorboard "$dir/tb_f" \
    > "$dir/failover.log" 2>&1 || fail "the run with a fail-over failed"
  grep -q '"event":"failover"' "$dir/f.jsonl" || fail "no failover event in the metrics file"
  check "$dir/tb_f" "$dir/f.jsonl"
  "$bin" gen-data criteo --out "$dir/criteo" --rows 6000 --test-rows 500 > /dev/null
  "$bin" simulate --model dlrm:8:16:16 --dataset "criteo:$dir/criteo/train.tsv" \
    --test "$dir/criteo/test.tsv" --batch 128 --eval-every 8 --no-progress --gauc-group C1 \
    --slice-auc C6 --metrics "$dir/ctr.jsonl" --tensorboard "$dir/tb_ctr" > "$dir/ctr.log" 2>&1 \
    || fail "the dlrm simulate failed"
  check "$dir/tb_ctr" "$dir/ctr.jsonl" --ctr --gauc --slices
  touch "$dir/not_a_dir"
  set +e
  "$bin" simulate --dataset synthetic --steps 5 --tensorboard "$dir/not_a_dir/tb" > "$dir/bad.log" 2>&1
  status=$?
  set -e
  [ "$status" = 2 ] || fail "an uncreatable --tensorboard directory exited $status, not 2"
  grep -q -- "--tensorboard: cannot create directory $dir/not_a_dir/tb" "$dir/bad.log" \
    || fail "the refusal does not name --tensorboard: $(cat "$dir/bad.log")"
  ;;
processes)
  ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 --connect-timeout 20 -- \
    --dataset synthetic --model 784-32-10 --steps 150 --eval-every 30 --no-progress \
    --metrics "$dir/m.jsonl" --tensorboard "$dir/tb" > "$dir/launch.log" 2>&1 \
    || fail "launch_local.sh exited non-zero"
  check "$dir/tb" "$dir/m.jsonl"
  ;;
resume)
  common=(--dataset synthetic --model 784-32-10 --eval-every 20 --no-progress
          --checkpoint-dir "$dir/ckpt" --checkpoint-every 50 --metrics "$dir/m.jsonl"
          --tensorboard "$dir/tb")
  "$bin" simulate "${common[@]}" --steps 100 > "$dir/run1.log" 2>&1 || fail "the first run failed"
  "$bin" simulate "${common[@]}" --steps 180 --resume > "$dir/run2.log" 2>&1 \
    || fail "the resumed run failed"
  grep -q "clock 100" "$dir/run2.log" || fail "the second run did not resume from clock 100"
  [ "$(ls "$dir/tb" | wc -l)" = 2 ] || fail "event files after a resume: $(ls "$dir/tb")"
  check "$dir/tb" "$dir/m.jsonl"
  ;;
*) echo "usage: $0 simulate|processes|resume [actorps]" >&2; exit 2 ;;
esac
echo "PASS: tensorboard $part"
