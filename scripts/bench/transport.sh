#!/usr/bin/env bash
# Usage: scripts/bench/transport.sh [-o FILE] [-i ITERATIONS]
#
# In-process push+pull round trips between a worker and one ps_shard (actorps_bench_transport)
# for shard payloads of ~64 KiB, 1 MiB, 4 MiB and 16 MiB (16384 · 4^k floats, rounded to layers
# {1024, k}; blocks of 65536 floats). Writes one JSON file (default build/bench/transport.json)
# holding each size's result: round-trip percentiles, GB/s and the standalone component timings.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build/bench/transport.json"
iterations=200
while getopts "o:i:h" opt; do
  case "$opt" in
    o) out="$(realpath -m "$OPTARG")" ;;
    i) iterations="$OPTARG" ;;
    *) usage ;;
  esac
done

bench="$root/build/actorps_bench_transport"
if [[ ! -x "$bench" ]]; then
  echo "transport.sh: $bench is missing; build first:" >&2
  echo "  cmake -S $root -B $root/build -DCMAKE_BUILD_TYPE=Release && cmake --build $root/build -j2" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
load_before="$(cut -d' ' -f1 /proc/loadavg)"

for floats in 16384 262144 1048576 4194304; do
  echo "transport.sh: $floats floats, $iterations iterations" >&2
  if ! timeout 120 "$bench" --floats "$floats" --iterations "$iterations" >>"$tmp/results.jsonl"; then
    echo "transport.sh: actorps_bench_transport --floats $floats failed or took over 120 s" >&2
    exit 1
  fi
done

python3 - "$tmp/results.jsonl" "$out" "$load_before" <<'EOF'
import json, sys

results_path, out_path, load_before = sys.argv[1:]
results = [json.loads(line) for line in open(results_path)]
summary = {
    "bench": "transport_sweep",
    "loadavg_1m_before": float(load_before),
    "loadavg_1m_after": float(open("/proc/loadavg").read().split()[0]),
    "push_pull_GBps_by_payload": {str(r["payload_bytes"]): r["push_pull_GBps"] for r in results},
    "results": results,
}
with open(out_path, "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(json.dumps(summary, indent=2))
EOF
echo "transport.sh: wrote $out" >&2
