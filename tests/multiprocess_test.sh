#!/usr/bin/env bash
# Multi-process runs on 127.0.0.1, one process per task:
#  1. scripts/launch_local.sh trains synthetic data, the summary is right and the chief alone
#     exports the model (--export-dir);
#  2. strangers sending garbage to a shard's and a worker's port, and a peer expecting another
#     message interface, are turned away while the run goes on and finishes cleanly; each
#     stranger is logged, with its address, by the task it tried;
#  3. SIGKILL on the chief makes every other task exit 138 (retryable) within the connect timeout;
#  4. SIGTERM to launch_local.sh stops every task (as Ctrl-C does; a background job of a script
#     ignores SIGINT, so the test sends TERM).
# After every run no port of its cluster is left listening.
# usage: tests/multiprocess_test.sh [path/to/actorps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/actorps}
dir=$(mktemp -d /tmp/actorps-mp.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

echo "== 1. launch_local.sh on synthetic data"
ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 --connect-timeout 20 \
  --keep-cluster "$dir/c1.json" -- \
  --dataset synthetic --model 784-64-10 --steps 300 --no-progress --metrics "$dir/m1.jsonl" \
  --export-dir "$dir/export" \
  > "$dir/launch.log" 2>&1 || { cat "$dir/launch.log"; fail "launch_local.sh exited non-zero"; }
for task in chief:0 ps:0 ps:1 worker:0 worker:1 evaluator:0; do
  grep -q "^$task | " "$dir/launch.log" || fail "no lines prefixed with $task"
done
# One host: pulls and pushes take shared memory beside the shards' local sockets, not CAF, and
# each ps task names each link's path.
for task in worker:0 worker:1 evaluator:0; do
  grep -q "^$task | .*connected to 2 shard(s) (data links: shared memory, shared memory)" "$dir/launch.log" \
    || fail "$task did not use shared memory data links"
done
for task in ps:0 ps:1; do
  grep -q "^$task | .*serving a data link from a local socket over shared memory" "$dir/launch.log" \
    || fail "$task did not log its links' path"
done
line=$(grep '"event":"summary"' "$dir/m1.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 300 ] || fail "clocks: $line"
[ "$(summary_field "$line" dropped_messages)" = 0 ] || fail "dropped: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy: $line"
# The workers report their clocks to the chief in batches across processes: every clock of
# every worker still reaches it once, in order, each with its minibatch's samples.
"$python" - "$dir/m1.jsonl" <<'PY' || fail "train events: not every clock of every worker, once, in order"
import json, sys
seen = {0: [], 1: []}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "train":
        seen[e["worker"]].append(e["clock"])
        assert e["samples"] > 0, e
sys.exit(0 if all(c == list(range(300)) for c in seen.values()) else 1)
PY
grep -q "exited non-zero" "$dir/launch.log" && fail "a task exited non-zero after a clean run"
no_listeners "$dir/c1.json"
# Only the chief exports, once, with its test metrics in metadata.json.
[ "$(ls -A "$dir/export")" = 1 ] || fail "export dir holds: $(ls -A "$dir/export")"
for f in metadata.json model.capnp model.onnx; do [ -s "$dir/export/1/$f" ] || fail "no export/1/$f"; done
"$python" - "$dir/export/1/metadata.json" <<'PY' || fail "metadata.json: $(cat "$dir/export/1/metadata.json")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["training"]["source"] == "chief" and m["training"]["clocks"] == 300, m["training"]
assert m["training"]["workers"] == 2 and m["training"]["shards"] == 2, m["training"]
assert m["test_accuracy"] > 0.9, m["test_accuracy"]
PY
grep -q "exported to $dir/export/1 " "$dir/launch.log" || fail "the chief did not say where it exported"

# Clusters of our own, for the next two parts.
start_tasks() {  # start_tasks CLUSTER TIMEOUT: every task but the chief, in the background
  task_pids=()
  for t in ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    "$bin" "${t%%:*}" --cluster "$1" --task "$t" --insecure --connect-timeout "$2" > "$dir/$t.log" 2>&1 &
    pids+=($!); task_pids+=($!)
  done
}

echo "== 2. strangers and a peer with another interface are turned away"
cluster "$dir/c2.json"
start_tasks "$dir/c2.json" 20
"$bin" chief --cluster "$dir/c2.json" --task chief:0 --insecure --connect-timeout 20 --dataset synthetic \
  --model 784-64-10 --steps 1500 --slow worker:0=2 --no-progress --metrics "$dir/m2.jsonl" \
  > "$dir/chief2.log" 2>&1 &
chief=$!; pids+=($chief)
await_training "$dir/m2.jsonl"
for target in "ps 0" "worker 0"; do
  port=$(port_of "$dir/c2.json" $target)
  "$python" - "$port" <<'PY'
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(os.urandom(4096) + b"\xff" * 4096)
s.close()
PY
done
# A ps whose "chief" is really worker:0's node: the interface check refuses it.
wport=$(port_of "$dir/c2.json" worker 0)
"$python" - "$dir/wrong.json" "$wport" <<'PY'
import json, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0))
json.dump({"cluster": {"chief": [f"127.0.0.1:{sys.argv[2]}"], "ps": [f"127.0.0.1:{s.getsockname()[1]}"], "worker": ["127.0.0.1:1"]}}, open(sys.argv[1], "w"))
PY
set +e
"$bin" ps --cluster "$dir/wrong.json" --task ps:0 --insecure --connect-timeout 2 > "$dir/wrong.log" 2>&1
wrong=$?
wait "$chief"; chief_status=$?
set -e
[ "$wrong" = 1 ] || fail "the mismatched peer exited $wrong"
grep -q "another message interface" "$dir/wrong.log" || { cat "$dir/wrong.log"; fail "no interface message"; }
[ "$chief_status" = 0 ] || { cat "$dir/chief2.log"; fail "the run did not survive the strangers"; }
for p in "${task_pids[@]}"; do wait "$p" || fail "a task exited non-zero after a clean run"; done
line=$(grep '"event":"summary"' "$dir/m2.jsonl")
[ "$(summary_field "$line" clocks)" = 1500 ] || fail "clocks: $line"
# Each stranger is logged once, with its address, by the task it tried; no CAF peer of the run
# (nor the mismatched ps, whose handshake was fine) is.
for t in ps:0 worker:0; do
  n=$(grep -c "^[0-9T:.Z-]* INFO $t: refused a connection from 127\.0\.0\.1:[0-9]*: not a CAF peer" "$dir/$t.log" || true)
  [ "$n" = 1 ] || fail "$t logged $n refusals of the stranger, not 1"
done
for f in ps:1 worker:1 evaluator:0 chief2; do
  if grep -q "refused a connection" "$dir/$f.log"; then fail "$f.log reports a refused connection"; fi
done
no_listeners "$dir/c2.json"

echo "== 3. losing the chief stops every task, 138 (retryable), within the connect timeout"
cluster "$dir/c3.json"
start_tasks "$dir/c3.json" 5
"$bin" chief --cluster "$dir/c3.json" --task chief:0 --insecure --connect-timeout 5 --dataset synthetic \
  --model 784-64-10 --steps 1000000 --no-progress --metrics "$dir/m3.jsonl" > "$dir/chief3.log" 2>&1 &
chief=$!; pids+=($chief)
await_training "$dir/m3.jsonl"
killed=$(date +%s%N)
kill -9 "$chief"
for i in "${!task_pids[@]}"; do
  set +e; timeout 5 tail --pid="${task_pids[$i]}" -f /dev/null; waited=$?; wait "${task_pids[$i]}"; status=$?; set -e
  [ "$waited" = 0 ] || fail "task $i still running 5 s after the chief died"
  [ "$status" = 138 ] || fail "task $i exited $status after losing the chief, not 138 (retryable)"
done
elapsed=$(( ($(date +%s%N) - killed) / 1000000 ))
grep -h "is gone" "$dir"/*:*.log
echo "all tasks exited 138 ${elapsed} ms after the chief was killed"
no_listeners "$dir/c3.json"

echo "== 4. SIGTERM to launch_local.sh stops every task"
ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 1 --workers 2 --connect-timeout 20 \
  --keep-cluster "$dir/c4.json" -- --dataset synthetic --model 784-64-10 --steps 1000000 \
  --no-progress --metrics "$dir/m4.jsonl" > "$dir/launch4.log" 2>&1 &
launcher=$!; pids+=($launcher)
await_training "$dir/m4.jsonl"
kill -TERM "$launcher"
set +e; timeout 15 tail --pid="$launcher" -f /dev/null; waited=$?; wait "$launcher"; status=$?; set -e
[ "$waited" = 0 ] || fail "launch_local.sh still running 15 s after SIGTERM"
[ "$status" = 130 ] || { cat "$dir/launch4.log"; fail "launch_local.sh exited $status after SIGTERM"; }
no_listeners "$dir/c4.json"

echo "== 5. a dlrm trained by a cluster exports every row its shards hold"
"$bin" gen-data criteo --out "$dir/criteo" --rows 8000 --test-rows 500 > /dev/null
ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --insecure --ps 2 --workers 2 --connect-timeout 20 -- \
  --model dlrm:8:16:16 --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv" \
  --epochs 1 --batch 256 --no-progress --metrics "$dir/m5.jsonl" --export-dir "$dir/ctr" \
  > "$dir/launch5.log" 2>&1 || { cat "$dir/launch5.log"; fail "the dlrm cluster exited non-zero"; }
grep -q "exported to $dir/ctr/1 " "$dir/launch5.log" || fail "the chief did not export the dlrm"
for f in metadata.json model.capnp model.onnx vocab/C1.tsv vocab/C26.tsv; do
  [ -s "$dir/ctr/1/$f" ] || fail "no ctr/1/$f"
done
# every row the shards reported is in the vocabularies (one header line per file)
line=$(grep '"event":"summary"' "$dir/m5.jsonl") || fail "no summary event of the dlrm run"
"$python" - "$line" "$dir/ctr/1" <<'PY' || fail "the export's rows are not the shards' rows"
import glob, json, sys
rows = sum(sum(shard) for shard in json.loads(sys.argv[1])["sparse_rows"])
vocab = sum(sum(1 for _ in open(f)) - 1 for f in glob.glob(sys.argv[2] + "/vocab/C*.tsv"))
meta = json.load(open(sys.argv[2] + "/metadata.json"))
assert rows == vocab == meta["model"]["table"]["rows"], (rows, vocab, meta["model"]["table"])
PY
"$bin" evaluate --model "$dir/ctr/1" --test "$dir/criteo/test.tsv" --json > "$dir/eval5.json" \
  || fail "evaluate of the dlrm export failed"
"$python" - "$dir/eval5.json" "$dir/ctr/1/metadata.json" <<'PY' || fail "evaluate disagrees with metadata.json"
import json, sys
e, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert e["auc"] == m["test_auc"] and e["logloss"] == m["test_logloss"], (e, m["test_auc"])
PY
echo PASS
