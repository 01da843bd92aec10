#!/usr/bin/env bash
# Export chains through the command line, on a CTR sync run with row eviction at full speed
# (DLRM, or the model given: deepfm's two tables), a version every 10 clocks while training:
#   A  every version full (--full-export-every 1);
#   B  a full version, then deltas of it (--full-export-every 3).
# Both write every version of the schedule (none passes unasked or is skipped while a full one
# is written); each of B's deltas folded (export --consolidate) holds model.capnp byte-identical
# to A's full version at the same clock; predict on the chain equals predict on the folded
# version; a damaged newest delta is skipped and named; a gap is refused naming the link; bad
# flags exit 2.
# usage: tests/export_chain_test.sh [path/to/actorps [MODEL]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
model=${2:-dlrm:8:16:16}
dir=$(mktemp -d /tmp/actorps-export-chain.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=${python:-python3}

"$bin" gen-data criteo --out "$dir/criteo" --rows 6000 --test-rows 500 > /dev/null
run() {  # NAME FLAGS...: a sync run of 50 clocks at full speed, an export version every 10
  local name=$1
  shift
  "$bin" simulate --model "$model" --dataset "criteo:$dir/criteo/train.tsv" \
    --test "$dir/criteo/test.tsv" --batch 64 --steps 50 --mode sync --eval-every 0 \
    --admit-after 1 --evict-after 3 --no-progress \
    --export-dir "$dir/$name" --export-every 10 --metrics "$dir/$name.jsonl" "$@" \
    > "$dir/$name.log" 2>&1 || { cat "$dir/$name.log" >&2; fail "run $name failed"; }
}
run a --full-export-every 1
run b --full-export-every 3

chain() {  # VERSION_DIR FIELD: metadata.json's chain.FIELD ("" when there is no chain)
  "$py" -c 'import json, sys
c = json.load(open(sys.argv[1] + "/metadata.json")).get("chain", {})
for k in sys.argv[2].split("."):
    c = c.get(k, {}) if isinstance(c, dict) else {}
print("" if c == {} else c)' "$1" "$2"
}
grep -q '"event":"export","clock":[0-9]*,"version":[0-9]*,"kind":"delta"' "$dir/b.jsonl" \
  || fail "run b wrote no delta version"
grep -q '"kind":"delta"' "$dir/a.jsonl" && fail "run a wrote a delta version"

# Every version of the schedule written by both runs (asked two ahead, the shards hold each
# request before they reach its clock), none skipped.
for name in a b; do
  clocks=$(grep -o '"event":"export","clock":[0-9]*' "$dir/$name.jsonl" | grep -o '[0-9]*$' | tr '\n' ' ')
  [ "$clocks" = "10 20 30 40 " ] || fail "run $name wrote versions at clocks '$clocks', not 10 20 30 40"
  grep -q '"event":"export_skipped"' "$dir/$name.jsonl" && fail "run $name skipped a version"
done

# Every delta of B against A's full version at its clock.
compared=0
deltas=0
newest_delta=""
for v in $(ls "$dir/b" | sort -n); do
  [ "$(chain "$dir/b/$v" kind)" = delta ] || continue
  newest_delta=$v
  deltas=$((deltas + 1))
  clock=$(chain "$dir/b/$v" clock)
  for w in $(ls "$dir/a"); do
    [ "$(chain "$dir/a/$w" clock)" = "$clock" ] || continue
    [ -f "$dir/b/$v/model.capnp" ] && fail "delta b/$v holds a model.capnp"
    rm -rf "$dir/folded"
    "$bin" export --consolidate "$dir/b/$v" --export-dir "$dir/folded" > "$dir/fold.log" 2>&1 \
      || { cat "$dir/fold.log" >&2; fail "export --consolidate b/$v failed"; }
    cmp "$dir/folded/1/model.capnp" "$dir/a/$w/model.capnp" \
      || fail "b's chain folded at clock $clock differs from a's full version a/$w"
    [ "$(chain "$dir/folded/1" kind)" = full ] || fail "the folded version is not full"
    compared=$((compared + 1))
  done
done
[ "$compared" -ge 1 ] && [ "$compared" = "$deltas" ] \
  || fail "$compared of b's $deltas deltas compared with a full version of a at its clock"

# What the shards sent the writer (the export events' rows): for a delta the rows it holds and
# its tombstones, no more (here, with eviction after 3 quiet clocks, about every row of the table
# was pushed since the version before: delta_export_test shows a delta of a few rows of many);
# for a full one every row (of both tables for wdl and deepfm).
"$py" - "$dir" <<'PY' || fail "the rows the shards sent do not follow what changed"
import json, os, sys
d = sys.argv[1]
def events(name):
    return [e for e in map(json.loads, open(f"{d}/{name}.jsonl")) if e["event"] == "export"]
def rows(meta):
    return meta["model"]["table"]["rows"] + meta["model"].get("wide_table", {}).get("rows", 0)
table = {}
for e in events("a"):
    table[e["clock"]] = rows(json.load(open(f"{d}/a/{e['version']}/metadata.json")))
    assert e["rows"] == table[e["clock"]], e
deltas = 0
for e in events("b"):
    meta = json.load(open(f"{d}/b/{e['version']}/metadata.json"))
    if e["kind"] == "delta":
        deltas += 1
        assert e["rows"] == meta["delta"]["rows"] and e["removed"] == meta["delta"]["removed_keys"], (e, meta["delta"])
        assert e["clock"] not in table or e["rows"] <= table[e["clock"]], (e, table)
    else:
        assert e["rows"] == rows(meta), e
assert deltas > 0
PY

# The newest delta's chain alone in a directory: predict on it = predict on its folded version.
base=$(chain "$dir/b/$newest_delta" base.version)
mkdir "$dir/c"
for v in $(ls "$dir/b" | sort -n); do
  [ "$v" -ge "$base" ] && [ "$v" -le "$newest_delta" ] && cp -r "$dir/b/$v" "$dir/c/"
done
input="$dir/criteo/test.tsv"
"$bin" export --consolidate "$dir/c" > "$dir/fold.log" 2>&1 \
  || { cat "$dir/fold.log" >&2; fail "export --consolidate c failed"; }
folded=$((newest_delta + 1))
[ "$(chain "$dir/c/$folded" kind)" = full ] || fail "c/$folded is not the folded full version"
mv "$dir/c/$folded" "$dir/folded_c"
"$bin" predict --model "$dir/c" --input "$input" > "$dir/chain.pred" 2> "$dir/chain.err" \
  || { cat "$dir/chain.err" >&2; fail "predict on the chain failed"; }
"$bin" predict --model "$dir/folded_c" --input "$input" > "$dir/folded.pred"
cmp "$dir/chain.pred" "$dir/folded.pred" || fail "predict on the chain differs from its folded version"
[ -s "$dir/chain.err" ] && fail "predict on a whole chain skipped something: $(cat "$dir/chain.err")"

# A damaged newest delta: skipped and named; the chain before it is served.
predecessor=$(chain "$dir/c/$newest_delta" predecessor.version)
cp -r "$dir/c" "$dir/damaged"
printf 'x' >> "$dir/damaged/$newest_delta/delta.capnp"
"$bin" predict --model "$dir/damaged" --input "$input" > "$dir/damaged.pred" 2> "$dir/damaged.err" \
  || { cat "$dir/damaged.err" >&2; fail "predict refused a chain whose newest delta is damaged"; }
grep -q "skipping $dir/damaged/$newest_delta: .*delta.capnp" "$dir/damaged.err" \
  || fail "the damaged delta is not named: $(cat "$dir/damaged.err")"
"$bin" predict --model "$dir/c/$predecessor" --input "$input" > "$dir/before.pred"
cmp "$dir/damaged.pred" "$dir/before.pred" || fail "the damaged chain does not serve the one before"

# A gap: the newest delta's predecessor gone; refused, naming both links.
cp -r "$dir/c" "$dir/gap"
rm -r "${dir:?}/gap/$predecessor"
set +e
"$bin" evaluate --model "$dir/gap" --test "$input" > "$dir/gap.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] || fail "evaluate on a chain with a gap exited $status, not 2"
grep -q "$dir/gap/$newest_delta builds on $dir/gap/$predecessor .*missing" "$dir/gap.log" \
  || fail "the gap is not named: $(cat "$dir/gap.log")"

refused() {  # WHAT FLAG ARGS...: exit 2, naming FLAG
  local what=$1 flag=$2
  shift 2
  set +e
  "$bin" simulate --dataset synthetic --steps 5 --no-progress "$@" > "$dir/bad.log" 2>&1
  local status=$?
  set -e
  [ "$status" = 2 ] || fail "$what exited $status, not 2"
  grep -q -- "$flag" "$dir/bad.log" || fail "$what: the refusal does not name $flag"
}
refused "--export-every without --export-dir" --export-every --export-every 10
refused "--export-every 0" --export-every --export-every 0 --export-dir "$dir/x"
refused "--full-export-every 0" --full-export-every --export-every 2 --export-dir "$dir/x" \
  --full-export-every 0
echo "export chains: $compared deltas folded byte-identical, predict equal, damage skipped, gap refused"
