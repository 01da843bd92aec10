# What the benchmark scripts that drive one benchmark binary share (sourced, not run).
# Expects $root (the repository) and $build (the build directory); $name names the script in
# messages.

# require_bench BINARY: fails naming the build command when the binary was not built.
require_bench() {
  if [[ ! -x "$1" ]]; then
    echo "$name: $1 is missing; build first:" >&2
    echo "  cmake -S $root -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build --target $(basename "$1") -j2" >&2
    exit 1
  fi
}

# run_bench SECONDS OUT BINARY ARGS...: runs the binary (at most SECONDS) and writes its JSON
# to OUT only when it succeeded, so a failed run never leaves a half-written result.
run_bench() {
  local limit=$1 out=$2 bin=$3 tmp
  shift 3
  mkdir -p "$(dirname "$out")"
  tmp="$(mktemp)"
  if ! timeout "$limit" "$bin" "$@" >"$tmp"; then
    rm -f "$tmp"
    echo "$name: $(basename "$bin") $* failed or took over $limit s" >&2
    exit 1
  fi
  mv "$tmp" "$out"
}

# free_port: a TCP port of 127.0.0.1 free right now (bound and released: another process may
# still take it before the caller does).
free_port() {
  "${python:-python3}" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"
}

# parse_ab_options "$@": the options of the scripts that compare two builds (ABBA), into
# $before, $after, $rounds and $out (set the defaults of the last three first); line 7 of the
# calling script is its usage. Both builds must have actorps_bench_transport.
parse_ab_options() {
  local opt OPTIND=1
  while getopts "a:b:r:o:" opt; do
    case $opt in a) before=$OPTARG ;; b) after=$OPTARG ;; r) rounds=$OPTARG ;; o) out=$OPTARG ;; *) sed -n 7p "$0" >&2; exit 2 ;; esac
  done
  [ -n "$before" ] || { sed -n 7p "$0" >&2; exit 2; }
  local b
  for b in "$before" "$after"; do
    [ -x "$b/actorps_bench_transport" ] || { echo "$b/actorps_bench_transport is missing" >&2; exit 2; }
  done
}

# criteo_data INPUT DIR: the CTR data of the resize benchmarks. INPUT, a `gen-data criteo` output
# directory (-i), or when empty $ctr_rows rows generated into DIR with $sim. Sets data (the
# directory), train (its train.tsv, or train/ of --days, read as a stream) and ctr_rows (its
# training lines).
criteo_data() {
  local input=$1
  data=$2
  if [[ -n "$input" ]]; then
    data=$input
    [[ -f "$data/test.tsv" && ( -f "$data/train.tsv" || -d "$data/train" ) ]] \
      || { echo "$name: -i $input: no gen-data criteo output there" >&2; exit 2; }
    if [[ -f "$data/train.tsv" ]]; then ctr_rows=$(wc -l < "$data/train.tsv")
    else ctr_rows=$(cat "$data"/train/* | wc -l); fi
  else
    echo "$name: generating $ctr_rows CTR training rows..." >&2
    "$sim" gen-data criteo --out "$data" --rows "$ctr_rows" --test-rows 2000 >/dev/null
  fi
  train="$data/train.tsv"
  [[ -d "$data/train" ]] && train="$data/train"
  return 0
}
