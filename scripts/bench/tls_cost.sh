#!/usr/bin/env bash
# The cost of mutual TLS, with and without, in one window:
#  - a 4 MiB push+pull between a worker process and a shard process (actorps_bench_transport)
#    over CAF's middleman alone (--no-data-link: the whole payload crosses CAF's TLS), over the
#    data link on loopback TCP (with --tls-dir mutual TLS: OpenSSL, tls_stream.hpp) and on the
#    local socket (with --tls-dir shared memory entered by a ticket taken over TLS);
#  - the default run's samples/s with scripts/launch_local.sh --tls and --insecure (pulls and
#    pushes take the data link: shared memory, proven over TLS with --tls).
# Writes one JSON file.
# usage: scripts/bench/tls_cost.sh [-o FILE] [-i ITERATIONS] [-b BUILD_DIR] [-r RUNS] [-f FLOATS]
#          [-q BYTES] [-L] [-- CHIEF FLAGS]
#   (chief flags replace the default run's, e.g. -- --epochs 1; -f: the push's floats, default
#   1048576 = 4 MiB; -q: the shard's --request-part-bytes, 0 reads every push whole before
#   applying it; -L: the push+pull alone, no launch_local.sh runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/tls_cost.json iterations=60 build=build runs=1 floats=1048576 part="" runs_too=1
while getopts "o:i:b:r:f:q:L" opt; do
  case $opt in o) out=$OPTARG ;; i) iterations=$OPTARG ;; b) build=$OPTARG ;; r) runs=$OPTARG ;;
    f) floats=$OPTARG ;; q) part=$OPTARG ;; L) runs_too=0 ;;
    *) sed -n 10,14p "$0"; exit 2 ;; esac
done
[[ $floats =~ ^[1-9][0-9]*$ ]] || { echo "tls_cost.sh: -f must be a positive number" >&2; exit 2; }
[[ -z $part || $part =~ ^[0-9]+$ ]] || { echo "tls_cost.sh: -q must be a number of bytes" >&2; exit 2; }
serve_flags=(); [ -n "$part" ] && serve_flags=(--request-part-bytes "$part")
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
      "$bench" --serve "$port" --floats "$floats" ${flags[@]+"${flags[@]}"} ${serve_flags[@]+"${serve_flags[@]}"} \
        2> "$tmp/serve.log" & server=$!
      conn=(); [ "$tls" = tls ] && conn=(--tls-dir "$tmp/certs")
      "$bench" --floats "$floats" --iterations "$iterations" --connect "127.0.0.1:$port" \
        ${conn[@]+"${conn[@]}"} > "$tmp/$transport-$tls-$run.json"
      # Over TLS the driver's exit message is refused (only chief:0 may stop a task's actors):
      # the serving process is stopped here, once the driver has written its figures.
      [ "$tls" = tls ] && kill "$server" 2>/dev/null
      wait "$server" || true; server=""
    done
  done
  for tls in plain tls; do
    [ "$runs_too" = 1 ] || continue
    flags=(--insecure); [ "$tls" = tls ] && flags=(--tls)
    ACTORPS_BINARY=$build/actorps scripts/launch_local.sh ${flags[@]+"${flags[@]}"} -- --no-progress \
      --metrics "$tmp/run-$tls-$run.jsonl" ${chief_flags[@]+"${chief_flags[@]}"} > "$tmp/run-$tls-$run.log" 2>&1 \
      || { tail -20 "$tmp/run-$tls-$run.log" >&2; exit 1; }
  done
done

"$python" - "$tmp" "$out" "$runs" "${chief_flags[*]:-}" "$floats" "$part" "$runs_too" <<'PY'
import json, os, statistics, sys
tmp, out, runs, chief_flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
floats, part, runs_too = int(sys.argv[5]), sys.argv[6], sys.argv[7] == "1"
def transport(t, tls):
    rs = [json.load(open(os.path.join(tmp, f"{t}-{tls}-{r}.json"))) for r in range(1, runs + 1)]
    return {"transport": rs[0]["transport"],
            "round_trip_ms_median": statistics.median(r["round_trip_ms"]["median"] for r in rs),
            "push_pull_GBps": statistics.median(r["push_pull_GBps"] for r in rs),
            "pipelined_ms_per_push_pull": statistics.median(r["pipelined_ms_per_push_pull"] for r in rs),
            # Over TLS the shard refuses the driver's stats request (chief:0's alone): null.
            "shard_pushes_streamed": None if tls == "tls" else sum(r["shard_pushes_streamed"] for r in rs),
            "shard_pushes": None if tls == "tls" else sum(r["shard_pushes"] for r in rs)}
def samples(tls):
    vals = []
    for r in range(1, runs + 1):
        for line in open(os.path.join(tmp, f"run-{tls}-{r}.jsonl")):
            e = json.loads(line)
            if e.get("event") == "summary": vals.append(e["samples_per_s"])
    return {"samples_per_s": vals, "median": statistics.median(vals)}
result = {"bench": "tls_cost", "runs": runs, "payload_floats": floats,
          "request_part_bytes": int(part) if part else "the shard's default (link_limits.hpp)",
          "push_pull_4MiB": {t: {tls: transport(t, tls) for tls in ("plain", "tls")} for t in ("caf", "tcp", "local")},
          "load_average": os.getloadavg()[0]}
if floats != 1048576:  # the key names the size it measures
    result[f"push_pull_{floats * 4 / 2**20:g}MiB"] = result.pop("push_pull_4MiB")
if runs_too:
    result["launch_local_default_run"] = {"chief_flags": chief_flags or "(defaults)",
                                          "plain": samples("plain"), "tls": samples("tls"),
                                          "note": "pulls and pushes take the data link: over TLS in the tls run"}
key = next(k for k in result if k.startswith("push_pull_"))
for t in ("caf", "tcp", "local"):
    p, s = result[key][t]["plain"], result[key][t]["tls"]
    result[key][t]["tls_over_plain_round_trip"] = s["round_trip_ms_median"] / p["round_trip_ms_median"]
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
