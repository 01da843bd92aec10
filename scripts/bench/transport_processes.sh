#!/usr/bin/env bash
# Push+pull throughput between a worker process and a shard process on loopback, for payloads of
# 64 KiB, 1 MiB, 4 MiB and 16 MiB, next to the same figure inside one process and next to the
# loopback TCP limit measured by iperf3. Writes one JSON file.
# usage: scripts/bench/transport_processes.sh [-o FILE] [-i ITERATIONS] [-b BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/transport_processes.json iterations=60 build=build
while getopts "o:i:b:" opt; do
  case $opt in o) out=$OPTARG ;; i) iterations=$OPTARG ;; b) build=$OPTARG ;; *) sed -n 5p "$0"; exit 2 ;; esac
done
bench=$build/actorps_bench_transport
[ -x "$bench" ] || { echo "$bench is missing: run scripts/setup.sh first" >&2; exit 2; }
command -v iperf3 > /dev/null || { echo "iperf3 is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
free_port() { "$python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }

# The loopback TCP limit: one iperf3 stream for 3 s.
port=$(free_port)
iperf3 -s -1 -p "$port" > /dev/null 2>&1 & server=$!
sleep 0.5  # iperf3 offers no readiness signal; it only has to bind a socket
iperf3 -c 127.0.0.1 -p "$port" -t 3 -J > "$tmp/iperf.json"
wait "$server" 2>/dev/null || true; server=""

for floats in 16384 262144 1048576 4194304; do
  "$bench" --floats "$floats" --iterations "$iterations" > "$tmp/local-$floats.json"
  port=$(free_port)
  "$bench" --serve "$port" 2> "$tmp/serve.log" & server=$!
  "$bench" --floats "$floats" --iterations "$iterations" --connect "127.0.0.1:$port" > "$tmp/remote-$floats.json"
  wait "$server" || true; server=""
done

"$python" - "$tmp" "$out" <<'PY'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
iperf = json.load(open(os.path.join(tmp, "iperf.json")))
tcp = iperf["end"]["sum_received"]["bits_per_second"] / 8 / 1e9
rows = []
for floats in (16384, 262144, 1048576, 4194304):
    local = json.load(open(os.path.join(tmp, f"local-{floats}.json")))
    remote = json.load(open(os.path.join(tmp, f"remote-{floats}.json")))
    rows.append({"payload_bytes": remote["payload_bytes"],
                 "in_process_round_trip_ms": local["round_trip_ms"]["median"],
                 "in_process_push_pull_GBps": local["push_pull_GBps"],
                 "two_process_round_trip_ms": remote["round_trip_ms"],
                 "two_process_push_pull_GBps": remote["push_pull_GBps"],
                 "two_process_bytes_moved_GBps": remote["bytes_moved_GBps"],
                 "two_process_scoped_round_trip_ms": remote["scoped_round_trip_ms"]["median"],
                 "components_ms": remote["components_ms"]})
four = next(r for r in rows if abs(r["payload_bytes"] - 4 * 2**20) < 8192)
result = {"bench": "transport_processes", "loopback_tcp_GBps_iperf3": tcp, "sizes": rows,
          "ps_lite_4MiB_push_pull_ms": 1.7,
          "ratio_vs_ps_lite_4MiB": 1.7 / four["two_process_round_trip_ms"]["median"],
          "load_average": os.getloadavg()[0]}
json.dump(result, open(out, "w"), indent=1)
print(f"loopback TCP (iperf3): {tcp:.2f} GB/s")
for r in rows:
    print(f"{r['payload_bytes']/2**20:7.3f} MiB  in-process {r['in_process_round_trip_ms']:7.3f} ms "
          f"({r['in_process_push_pull_GBps']:.2f} GB/s)   two processes {r['two_process_round_trip_ms']['median']:7.3f} ms "
          f"({r['two_process_push_pull_GBps']:.2f} GB/s)")
print(f"4 MiB vs ps-lite's 1.7 ms: {result['ratio_vs_ps_lite_4MiB']:.2f}x  -> {out}")
PY
