#!/usr/bin/env bash
# Usage: scripts/bench/resize_restart.sh [-o FILE] [-b BUILD_DIR] [-n CTR_ROWS | -i GEN_DIR] [-c CLOCK] [-p NEW_PS] [-a ADMIT_AFTER] [-k CASES]
#
# A change of shard count the stop-the-world way: a sync run at 2 shards × 2 workers stops at
# CLOCK (default 200) with a checkpoint there, then starts again with `--resume --ps NEW_PS`
# (default 3) for one clock more. For the README's CTR example (`dlrm` on CTR_ROWS `gen-data
# criteo` rows, default 2 000 000, a test set of 2 000), the default MLP (784-256-128-10 on
# Fashion-MNIST) and the large one (`large`: 784-2048-2048-10); the same restart at 2 shards (no
# cut) for comparison. -a N gives the CTR runs
# --admit-after N (default: the model's, 20; 1 gives every key seen a row). -i GEN_DIR: the CTR
# data is a `gen-data criteo` output directory instead (train.tsv, or train/ of --days: read as a
# stream). -k the cases to run (comma-separated, default ctr,mlp; `sparse` is the CTR example with
# --admit-after 1, live_resize.sh's case of that name).
#
# Figures per case, in seconds: checkpoint_s (the stopped run's checkpoint, asked to committed:
# its metrics), start_to_restored (the new process's launch to its last shard's "restored" log
# line: data loaded, checkpoint read, checked and cut, shards restored), start_to_first_clock
# (to the first "train" event in its metrics, watched every 5 ms), and stop_to_first_clock =
# checkpoint_s + start_to_first_clock (the stopped process's exit overlaps the new one's start).
# The JSON (default BUILD_DIR/bench/resize_restart.json) holds them with the checkpoint's bytes.
# About 3 min at the defaults on 2 cores; `-n 20000 -c 50` takes seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" ctr_rows=2000000 clock=200 new_ps=3 admit=() input="" cases=ctr,mlp
while getopts "o:b:n:i:c:p:a:k:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) ctr_rows="$OPTARG" ;;
    i) input="$(realpath -m "$OPTARG")" ;;
    c) clock="$OPTARG" ;;
    k) cases="$OPTARG" ;;
    p) new_ps="$OPTARG" ;;
    a) admit=(--admit-after "$OPTARG") ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/resize_restart.json}")"
mkdir -p "$(dirname "$out")"
if ! [[ "$ctr_rows" =~ ^[0-9]+$ && "$clock" =~ ^[0-9]+$ && "$new_ps" =~ ^[0-9]+$ ]] \
   || (( ctr_rows < 1000 || clock < 10 || new_ps < 1 )); then
  echo "resize_restart.sh: -n must be 1000 or more, -c 10 or more, -p 1 or more" >&2
  exit 2
fi

[[ "$cases" =~ ^(mlp|large|ctr|sparse)(,(mlp|large|ctr|sparse))*$ ]] \
  || { echo "resize_restart.sh: -k $cases: expected cases of ctr,mlp,large,sparse" >&2; exit 2; }

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
sim="$build/actorps"
require_bench "$sim"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

criteo_data "$input" "$tmp/criteo"
ctr=(--model dlrm --dataset "criteo:$train" --test "$data/test.tsv" "${admit[@]}")
sparse=(--model dlrm --dataset "criteo:$train" --test "$data/test.tsv" --admit-after 1)
mlp=(--model 784-256-128-10)
large=(--model 784-2048-2048-10)
common=(--no-progress --mode sync --workers 2)

# stopped CASE: the case at 2 shards, to clock $clock, where it checkpoints.
stopped() {
  local kind=$1
  local -n flags=$kind
  local dir="$tmp/$kind"
  mkdir -p "$dir"
  if ! timeout 900 "$sim" simulate "${flags[@]}" "${common[@]}" --ps 2 --eval-every 0 \
         --steps "$clock" --checkpoint-dir "$dir/ckpt" --checkpoint-every "$clock" \
         --metrics "$dir/stopped.jsonl" > "$dir/stopped.log" 2>&1; then
    cat "$dir/stopped.log" >&2
    echo "$name: the $kind run failed" >&2
    exit 1
  fi
}

# restarted CASE PS: resumes the case's checkpoint at PS shards for one clock, timed.
restarted() {
  local kind=$1 ps=$2
  local -n flags=$kind
  local dir="$tmp/$kind"
  "${python:-python3}" - "$dir" "$ps" "$sim" "${flags[@]}" "${common[@]}" --ps "$ps" \
    --eval-every 0 --steps $((clock + 1)) --resume "$dir/ckpt" --metrics "$dir/restart-$ps.jsonl" \
    <<'PY' || { cat "$dir/restart-$ps.log" >&2; echo "$name: the $kind restart failed" >&2; exit 1; }
import json, subprocess, sys, time
d, ps, cmd = sys.argv[1], sys.argv[2], [sys.argv[3], "simulate"] + sys.argv[4:]
metrics = f"{d}/restart-{ps}.jsonl"
start = time.time()
with open(f"{d}/restart-{ps}.log", "w") as log:
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    first = None
    while first is None and proc.poll() is None:
        try:
            if '"event":"train"' in open(metrics).read():
                first = time.time()
        except FileNotFoundError:
            pass
        time.sleep(0.005)  # a benchmark's watch, not the product's
    if proc.wait(900) != 0:
        sys.exit(1)
json.dump({"start": start, "first_clock": first, "exit": time.time()},
          open(f"{d}/times-{ps}.json", "w"))
PY
}

for kind in ${cases//,/ }; do
  echo "$name: $kind: stopping at 2 shards at clock $clock, restarting at $new_ps and at 2" >&2
  stopped "$kind"
  restarted "$kind" "$new_ps"
  restarted "$kind" 2
done

python3 - "$tmp" "$out" "$ctr_rows" "$clock" "$new_ps" "${admit[*]:-}" "$cases" <<'PY'
import datetime, json, os, re, sys

tmp, out, ctr_rows, clock, new_ps, admit, cases = sys.argv[1:]
cases = cases.split(",")

def t(path):
    return float(open(path).read())

def restored_at(log):
    """The wall time of the last shard's "restored to the checkpoint" line."""
    last = None
    for line in open(log):
        if "restored to the checkpoint" in line:
            stamp = line.split()[0].rstrip("Z")
            last = datetime.datetime.fromisoformat(stamp).replace(
                tzinfo=datetime.timezone.utc).timestamp()
    return last

def case(kind):
    d = f"{tmp}/{kind}"
    ckpt = [json.loads(l) for l in open(f"{d}/stopped.jsonl") if '"checkpoint"' in l][-1]
    checkpoint_s = ckpt["ms"] / 1000
    res = {"checkpoint_clock": ckpt["clock"], "checkpoint_bytes": ckpt["bytes"],
           "checkpoint_s": round(checkpoint_s, 3)}
    for ps in (int(new_ps), 2):
        times = json.load(open(f"{d}/times-{ps}.json"))
        restored = restored_at(f"{d}/restart-{ps}.log")
        first = times["first_clock"] - times["start"]
        res[f"restart_at_{ps}"] = {
            "start_to_restored_s": round(restored - times["start"], 3) if restored else None,
            "start_to_first_clock_s": round(first, 3),
            "stop_to_first_clock_s": round(checkpoint_s + first, 3),
        }
    return res

result = {
    "bench": "resize_restart",
    "what": f"sync, 2 workers: stop at 2 shards at clock {clock} with a checkpoint, resume at "
            f"{new_ps} (and at 2) for one clock",
    "load_average": os.getloadavg()[0],
    "date": datetime.date.today().isoformat(),
}
runs = {"ctr": f"dlrm on {ctr_rows} gen-data criteo rows {admit}".strip(),
        "sparse": f"dlrm --admit-after 1 on {ctr_rows} gen-data criteo rows",
        "mlp": "784-256-128-10 on Fashion-MNIST",
        "large": "784-2048-2048-10 on Fashion-MNIST"}
for kind in cases:
    result[kind] = dict(run=runs[kind], **case(kind))
json.dump(result, open(out, "w"), indent=2)
for kind in cases:
    c = result[kind]
    a, b = c[f"restart_at_{new_ps}"], c["restart_at_2"]
    print(f"{kind}: stop -> first clock at {new_ps} shards {a['stop_to_first_clock_s']:.2f} s "
          f"(checkpoint {c['checkpoint_s']:.2f} s, restart to restored {a['start_to_restored_s']} s); "
          f"at 2 shards {b['stop_to_first_clock_s']:.2f} s")
PY
