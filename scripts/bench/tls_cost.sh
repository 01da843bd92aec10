#!/usr/bin/env bash
# The cost of mutual TLS, with and without, in one window:
#  - a 4 MiB push+pull between a worker process and a shard process (actorps_bench_transport)
#    over CAF's middleman alone (--no-data-link: the whole payload crosses CAF's TLS), over the
#    data link on loopback TCP and over the data link's local socket (with --tls-dir both the
#    CAF connection and the data link are mutual TLS: OpenSSL in user space, tls_stream.hpp);
#  - the default run's samples/s with scripts/launch_local.sh, with and without --tls (pulls
#    and pushes take the data link, over TLS with --tls).
# Writes one JSON file.
# usage: scripts/bench/tls_cost.sh [-o FILE] [-i ITERATIONS] [-b BUILD_DIR] [-r RUNS] [-- CHIEF FLAGS]
#   (chief flags replace the default run's, e.g. -- --epochs 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/tls_cost.json iterations=60 build=build runs=1
while getopts "o:i:b:r:" opt; do
  case $opt in o) out=$OPTARG ;; i) iterations=$OPTARG ;; b) build=$OPTARG ;; r) runs=$OPTARG ;;
    *) sed -n 10,11p "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
chief_flags=("$@")
bench=$build/actorps_bench_transport
[ -x "$bench" ] || { echo "$bench is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/bench_lib.sh"  # free_port
scripts/make_certs.sh "$tmp/certs" ps:0 worker:0 > /dev/null

for run in $(seq 1 "$runs"); do
  for transport in caf tcp local; do
    for tls in plain tls; do
      flags=(); [ "$transport" = caf ] && flags+=(--no-data-link); [ "$transport" = tcp ] && flags+=(--tcp-link)
      [ "$tls" = tls ] && flags+=(--tls-dir "$tmp/certs")
      port=$(free_port)
      "$bench" --serve "$port" --floats 1048576 "${flags[@]}" 2> "$tmp/serve.log" & server=$!
      conn=(); [ "$tls" = tls ] && conn=(--tls-dir "$tmp/certs")
      "$bench" --floats 1048576 --iterations "$iterations" --connect "127.0.0.1:$port" \
        ${conn[@]+"${conn[@]}"} > "$tmp/$transport-$tls-$run.json"
      wait "$server" || true; server=""
    done
  done
  for tls in plain tls; do
    flags=(); [ "$tls" = tls ] && flags=(--tls)
    ACTORPS_BINARY=$build/actorps scripts/launch_local.sh ${flags[@]+"${flags[@]}"} -- --no-progress \
      --metrics "$tmp/run-$tls-$run.jsonl" ${chief_flags[@]+"${chief_flags[@]}"} > "$tmp/run-$tls-$run.log" 2>&1 \
      || { tail -20 "$tmp/run-$tls-$run.log" >&2; exit 1; }
  done
done

"$python" - "$tmp" "$out" "$runs" "${chief_flags[*]:-}" <<'PY'
import json, os, statistics, sys
tmp, out, runs, chief_flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def transport(t, tls):
    rs = [json.load(open(os.path.join(tmp, f"{t}-{tls}-{r}.json"))) for r in range(1, runs + 1)]
    return {"transport": rs[0]["transport"],
            "round_trip_ms_median": statistics.median(r["round_trip_ms"]["median"] for r in rs),
            "push_pull_GBps": statistics.median(r["push_pull_GBps"] for r in rs),
            "pipelined_ms_per_push_pull": statistics.median(r["pipelined_ms_per_push_pull"] for r in rs)}
def samples(tls):
    vals = []
    for r in range(1, runs + 1):
        for line in open(os.path.join(tmp, f"run-{tls}-{r}.jsonl")):
            e = json.loads(line)
            if e.get("event") == "summary": vals.append(e["samples_per_s"])
    return {"samples_per_s": vals, "median": statistics.median(vals)}
result = {"bench": "tls_cost", "runs": runs,
          "push_pull_4MiB": {t: {tls: transport(t, tls) for tls in ("plain", "tls")} for t in ("caf", "tcp", "local")},
          "launch_local_default_run": {"chief_flags": chief_flags or "(defaults)",
                                       "plain": samples("plain"), "tls": samples("tls"),
                                       "note": "pulls and pushes take the data link: over TLS in the tls run"},
          "load_average": os.getloadavg()[0]}
for t in ("caf", "tcp", "local"):
    p, s = result["push_pull_4MiB"][t]["plain"], result["push_pull_4MiB"][t]["tls"]
    result["push_pull_4MiB"][t]["tls_over_plain_round_trip"] = s["round_trip_ms_median"] / p["round_trip_ms_median"]
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
