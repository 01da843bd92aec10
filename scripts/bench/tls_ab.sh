#!/usr/bin/env bash
# Two builds compared over mutual TLS through CAF's middleman alone (--no-data-link: every
# request and reply crosses the TLS scribe and the role checks of the shard), alternated round
# by round (ABBA): a small push+pull, where the per-message costs (BASP origin check, role
# authorisation) weigh most, and a 4 MiB one. Reports the wall-clock round trip and the shard
# process's CPU seconds (user + sys) for the same requests, and the after/before ratios.
# usage: scripts/bench/tls_ab.sh -a BEFORE_BUILD [-b AFTER_BUILD] [-r ROUNDS] [-o FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
before="" after=build rounds=4 out=build/bench/tls_ab.json
. "$(dirname "$0")/bench_lib.sh"  # parse_ab_options, free_port
parse_ab_options "$@"
python=$(command -v /usr/bin/python3 || command -v python3)
tmp=$(mktemp -d)
server=""
# $server is /usr/bin/time: stop the benchmark under it too
trap '[ -n "$server" ] && kill $(pgrep -P "$server") "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
scripts/make_certs.sh "$tmp/certs" ps:0 worker:0 > /dev/null
mkdir -p "$(dirname "$out")"
for ((r = 1; r <= rounds; r++)); do
  order="before after"; [ $((r % 2)) = 0 ] && order="after before"
  for side in $order; do
    b=$([ "$side" = before ] && echo "$before" || echo "$after")
    for floats in 4100 1048576; do
      iterations=$([ "$floats" = 4100 ] && echo 2000 || echo 60)
      port=$(free_port)
      /usr/bin/time -f "%U %S" -o "$tmp/cpu-$side-$floats-$r" "$b/actorps_bench_transport" \
        --serve "$port" --floats "$floats" --no-data-link --tls-dir "$tmp/certs" 2> /dev/null & server=$!
      "$b/actorps_bench_transport" --floats "$floats" --iterations "$iterations" \
        --connect "127.0.0.1:$port" --tls-dir "$tmp/certs" > "$tmp/wall-$side-$floats-$r.json"
      wait "$server" || true; server=""
    done
  done
done
"$python" - "$tmp" "$out" "$rounds" "$before" "$after" <<'PY'
import json, os, statistics as st, sys
tmp, out, rounds, before, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def wall(side, f, r): return json.load(open(f"{tmp}/wall-{side}-{f}-{r}.json"))["round_trip_ms"]["median"]
def cpu(side, f, r): return sum(map(float, open(f"{tmp}/cpu-{side}-{f}-{r}").read().split()[-2:]))
result = {"bench": "tls_ab", "before": before, "after": after, "rounds": rounds,
          "transport": "CAF middleman over mutual TLS (no data link)", "sizes": {}}
for f, name in ((4100, "16 KiB"), (1048576, "4 MiB")):
    w = {s: [wall(s, f, r) for r in range(1, rounds + 1)] for s in ("before", "after")}
    c = {s: [cpu(s, f, r) for r in range(1, rounds + 1)] for s in ("before", "after")}
    result["sizes"][name] = {
        "round_trip_ms_median": {s: st.median(w[s]) for s in w},
        "shard_cpu_s_median": {s: st.median(c[s]) for s in c},
        "after_over_before_round_trip": st.median(w["after"]) / st.median(w["before"]),
        "after_over_before_shard_cpu": st.median(c["after"]) / st.median(c["before"]),
        "per_round_ms": w, "per_round_shard_cpu_s": c}
result["load_average"] = os.getloadavg()[0]
json.dump(result, open(out, "w"), indent=1)
print(json.dumps({k: v for k, v in result["sizes"].items()}, indent=1))
PY
