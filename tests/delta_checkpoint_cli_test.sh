#!/usr/bin/env bash
# Delta checkpoints through the command line, on a DLRM (CTR) sync run with row eviction:
#   A  every checkpoint full (--full-checkpoint-every 1), exported;
#   B  deltas after a full one, written by the chief (--checkpoint-writer chief), and ps:0 lost
#      at clock 35 (after the delta at 30): the run goes back to the chain 10 + 20 + 30.
# B's exported model.capnp is byte-identical to A's, and so is `actorps export --checkpoint` of
# B's last checkpoint (a delta: its chain folded) to A's; a bad flag names itself (exit 2).
# usage: tests/delta_checkpoint_cli_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-delta.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" gen-data criteo --out "$dir/criteo" --rows 6000 --test-rows 500 > /dev/null
# a sync DLRM run of 40 clocks, a checkpoint every 10; the workers slowed to 15 ms a clock so that
# a chief on a loaded machine keeps up with every checkpoint (one it lags past is skipped)
run() {  # NAME FLAGS...
  local name=$1
  shift
  "$bin" simulate --model dlrm:8:16:16 --dataset "criteo:$dir/criteo/train.tsv" \
    --test "$dir/criteo/test.tsv" --batch 64 --steps 40 --mode sync --eval-every 0 \
    --admit-after 1 --evict-after 3 --slow worker:0=15 --slow worker:1=15 --no-progress \
    --checkpoint-dir "$dir/$name.ckpt" --checkpoint-every 10 --keep 100 \
    --export-dir "$dir/$name.export" --metrics "$dir/$name.jsonl" "$@" \
    > "$dir/$name.log" 2>&1 || { cat "$dir/$name.log" >&2; fail "run $name failed"; }
}
run a --full-checkpoint-every 1
run b --full-checkpoint-every 100 --checkpoint-writer chief --kill ps:0@clock=35

grep -q '"kind":"delta"' "$dir/a.jsonl" && fail "run a wrote a delta checkpoint"
kind() { "${python:-python3}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["kind"])' "$1"; }
[ "$(kind "$dir/b.ckpt/ckpt-000000000040/MANIFEST.json")" = delta ] || fail "ckpt 40 of b is not a delta"
grep -q '"event":"recovery"' "$dir/b.jsonl" || fail "run b did not recover from the lost shard"
# back to 30 (or 20, when a loaded machine skipped 30): a delta of 10
back=$(grep -o 'restoring every shard to [^ ]*ckpt-0000000000[0-9]0' "$dir/b.log" | grep -o 'ckpt-[0-9]*$') \
  || fail "run b did not go back to a checkpoint"
[ "$back" != ckpt-000000000010 ] || fail "run b went back to the full checkpoint, not to a chain"
[ "$(kind "$dir/b.ckpt/$back/MANIFEST.json")" = delta ] || fail "$back of b is not a delta"
cmp "$dir/a.export/1/model.capnp" "$dir/b.export/1/model.capnp" \
  || fail "the run that lost a shard and restored a chain exports another model"

for name in a b; do
  "$bin" export --checkpoint "$dir/$name.ckpt" --export-dir "$dir/$name.fromckpt" \
    --test "$dir/criteo/test.tsv" \
    > "$dir/$name.export.log" 2>&1 || { cat "$dir/$name.export.log" >&2; fail "export of $name failed"; }
done
cmp "$dir/a.fromckpt/1/model.capnp" "$dir/b.fromckpt/1/model.capnp" \
  || fail "export --checkpoint of a chain differs from that of a full checkpoint"

set +e
"$bin" simulate --dataset synthetic --steps 5 --checkpoint-dir "$dir/bad" --full-checkpoint-every 0 \
  > "$dir/bad.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] || fail "--full-checkpoint-every 0 exited $status, not 2"
grep -q "full-checkpoint-every" "$dir/bad.log" || fail "the refusal does not name the flag"
echo "delta checkpoints: exports byte-identical, chain restored after a lost shard"
