# What resize_kill_test.sh and worker_resume_test.sh share, sourced with the scratch directory's
# name once `bin` is set: that directory, a Criteo-format set and the two models their sync runs
# train (lr on it, and the MLP on synthetic rows), and a run killed (SIGKILL) when a condition
# holds.
dir=$(mktemp -d "/tmp/actorps-$1.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" gen-data criteo --out "$dir/criteo" --rows 8000 --test-rows 400 > /dev/null
sparse=(--model lr --dataset "criteo:$dir/criteo/train.tsv" --test "$dir/criteo/test.tsv"
        --admit-after 2)
dense=(--model 784-32-10 --dataset synthetic --synthetic-rows 8192)

# killed_run NAME UNTIL... -- ARGS...: `actorps simulate ARGS...` (log NAME.log, ARGS export to
# NAME.export), killed once the command UNTIL succeeds, at most 60 s in; it may not end first.
killed_run() {
  local name=$1
  shift
  local until=()
  while [ "$1" != -- ]; do until+=("$1"); shift; done
  shift
  "$bin" simulate "$@" > "$dir/$name.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + 60))
  # the log and the directory announce nothing: looked at every 2 ms (a run lasts about 1 s)
  until "${until[@]}"; do
    kill -0 "$pid" 2> /dev/null || { cat "$dir/$name.log" >&2; fail "$name ended first"; }
    [ $SECONDS -lt $deadline ] || fail "$name: ${until[*]} never held"
    sleep 0.002
  done
  kill -9 "$pid"
  wait "$pid" 2> /dev/null || true
  [ ! -e "$dir/$name.export/1/model.capnp" ] || fail "$name exported before it was killed"
}
logged() { grep -q "$2" "$1" 2> /dev/null; }
