#!/usr/bin/env bash
# The 4 MiB push+pull between a worker process and a shard process, over the data link (TCP and
# local socket), for two builds alternated round by round (ABBA): the wall-clock round trip and
# the shard process's CPU seconds (user + sys) for the same requests. On a shared machine the
# wall clock swings with the load; the CPU the shard spends per run does much less. Writes JSON
# with the after/before ratios (medians, minima, per-round medians).
# usage: scripts/bench/transport_ab.sh -a BEFORE_BUILD [-b AFTER_BUILD] [-r ROUNDS] [-o FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
before="" after=build rounds=6 out=build/bench/transport_ab.json
. "$(dirname "$0")/bench_lib.sh"  # parse_ab_options, free_port
parse_ab_options "$@"
python=$(command -v /usr/bin/python3 || command -v python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 1; r <= rounds; r++)); do
  order="before after"; [ $((r % 2)) = 0 ] && order="after before"
  for side in $order; do
    b=$([ "$side" = before ] && echo "$before" || echo "$after")
    for transport in tcp socket; do
      flag=$([ "$transport" = tcp ] && echo --tcp-link || echo "")
      port=$(free_port)
      /usr/bin/time -f "%U %S" -o "$tmp/cpu-$side-$transport-$r" \
        "$b/actorps_bench_transport" --serve "$port" $flag 2> /dev/null & server=$!
      "$b/actorps_bench_transport" --floats 1048576 --iterations 60 --connect "127.0.0.1:$port" \
        > "$tmp/wall-$side-$transport-$r.json"
      wait "$server" || true
    done
  done
done
"$python" - "$tmp" "$out" "$rounds" "$before" "$after" <<'PY'
import json, os, statistics as st, sys
tmp, out, rounds, before, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def wall(side, t, r): return json.load(open(f"{tmp}/wall-{side}-{t}-{r}.json"))["round_trip_ms"]["median"]
def cpu(side, t, r): return sum(map(float, open(f"{tmp}/cpu-{side}-{t}-{r}").read().split()[-2:]))
result = {"bench": "transport_ab", "payload_bytes": 4 << 20, "rounds": rounds, "before": before,
          "after": after, "load_average": os.getloadavg()[0]}
for t in ("tcp", "socket"):
    row = {}
    for name, f in (("round_trip_ms", wall), ("shard_cpu_s", cpu)):
        b = [f("before", t, r) for r in range(1, rounds + 1)]
        a = [f("after", t, r) for r in range(1, rounds + 1)]
        row[name] = {"before": b, "after": a,
                     "ratio_of_medians": st.median(a) / st.median(b),
                     "ratio_of_minima": min(a) / min(b),
                     "median_round_ratio": st.median(x / y for x, y in zip(a, b))}
    result[t] = row
    print(f"{t:6} after/before: round trip medians {row['round_trip_ms']['ratio_of_medians']:.2f} "
          f"minima {row['round_trip_ms']['ratio_of_minima']:.2f}; shard CPU medians "
          f"{row['shard_cpu_s']['ratio_of_medians']:.2f} minima {row['shard_cpu_s']['ratio_of_minima']:.2f}")
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
json.dump(result, open(out, "w"), indent=1)
print(f"load average {result['load_average']:.1f} -> {out}")
PY
