#!/usr/bin/env bash
# Push+pull throughput between a worker process and a shard process on one host, for payloads of
# 64 KiB, 1 MiB, 4 MiB and 16 MiB, over each transport a worker can use: the data link over
# loopback TCP (what tasks on different hosts use), the data link over a local socket alone, the
# data link with shared memory (what tasks on the same host use: payloads through memfd rings,
# headers on the local socket; its ratio is to one memcpy of the payload), and CAF's middleman alone (before the data link); next to the same
# figure inside one process, the loopback TCP limit measured by iperf3, and the floor: the same
# sockets echoing frames of the payload's size, with nothing else to do. Per size and transport
# it also reports, for the timed round trips, the CPU time and minor page faults of each side
# (the worker's from getrusage/CLOCK_PROCESS_CPUTIME_ID, the shard process's from /proc), the
# payload bytes our code copied per round trip on each side (copied_payload_bytes, counted in
# the codecs; the shard's over its whole life, divided by the push_pulls it was sent), and the
# round trip's ratio to the floor, and its CPU (both sides) over the floor's (both processes:
# cpu_ratio_to_floor, the nearest the cores let it come to the floor at the floor's own overlap);
# and the same round trips over a raw connection of the data
# link without actors on the worker's side (pushes by reference, replies received in place), the
# data path's own cost. Writes one JSON file.
# The memcpy references (components_ms, and the ratios of the shm and in-process round trips to
# them): "memcpy" copies one hot pair of buffers again and again (both in the L3 cache up to
# 16 MiB: the fastest a copy of the payload can be); "memcpy_cold" rotates through pairs totalling
# at least 96 MiB, so that source and destination come from and go to memory, as a payload of a
# real round trip does (one memcpy of 4 MiB costs about 0.29 ms here). ratio_to_memcpy and
# in_process_ratio_to_memcpy are over the hot copy, the *_cold ones over the cold copy.
# usage: scripts/bench/transport_processes.sh [-o FILE] [-i ITERATIONS] [-b BUILD_DIR] [-s "FLOATS ..."] [-q BYTES] [-r BYTES]
#   -s: the payload sizes in floats (default "16384 262144 1048576 4194304": 64 KiB to 16 MiB)
#   -q: the shard's link_limits::request_part_bytes (a push applied as it arrives, in runs of
#       this many bytes; 0: read whole first); default: the shard's own default
#   -r: the shard's link_limits::reply_part_bytes (replies ahead in parts; 0: whole)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/transport_processes.json iterations=60 build=build
sizes="16384 262144 1048576 4194304"
request_parts=() reply_parts=()
while getopts "o:i:b:s:q:r:" opt; do
  case $opt in
    o) out=$OPTARG ;; i) iterations=$OPTARG ;; b) build=$OPTARG ;; s) sizes=$OPTARG ;;
    q) request_parts=(--request-part-bytes "$OPTARG") ;;
    r) reply_parts=(--reply-part-bytes "$OPTARG") ;;
    *) sed -n 22,26p "$0"; exit 2 ;;
  esac
done
bench=$build/actorps_bench_transport
floor=$build/actorps_bench_socket_floor
for b in "$bench" "$floor"; do
  [ -x "$b" ] || { echo "$b is missing: run scripts/setup.sh first" >&2; exit 2; }
done
command -v iperf3 > /dev/null || { echo "iperf3 is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/bench_lib.sh"  # free_port

# The loopback TCP limit: one iperf3 stream for 3 s.
port=$(free_port)
iperf3 -s -1 -p "$port" > /dev/null 2>&1 & server=$!
sleep 0.5  # iperf3 offers no readiness signal; it only has to bind a socket
iperf3 -c 127.0.0.1 -p "$port" -t 3 -J > "$tmp/iperf.json"
wait "$server" 2>/dev/null || true; server=""

for floats in $sizes; do
  "$bench" --floats "$floats" --iterations "$iterations" > "$tmp/local-$floats.json"
  for family in tcp unix; do
    "$floor" --family "$family" --bytes $((floats * 4)) --iterations "$iterations" \
      > "$tmp/floor-$family-$floats.json"
  done
  for transport in tcp socket shm caf; do
    case $transport in
      tcp) flag=--tcp-link path=tcp ;; socket) flag="" path=socket ;; shm) flag="" path=shm ;;
      caf) flag=--no-data-link path=auto ;;
    esac
    port=$(free_port)
    "$bench" --serve "$port" $flag "${request_parts[@]}" "${reply_parts[@]}" 2> "$tmp/serve-$transport-$floats.log" & server=$!
    "$bench" --floats "$floats" --iterations "$iterations" --connect "127.0.0.1:$port" \
      --data-link "$path" --shard-pid "$server" > "$tmp/$transport-$floats.json"
    wait "$server" || true; server=""
  done
done

REQUEST_PART_BYTES=${request_parts[1]:-} REPLY_PART_BYTES=${reply_parts[1]:-} "$python" - "$tmp" "$out" $sizes <<'PY'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
iperf = json.load(open(os.path.join(tmp, "iperf.json")))
tcp = iperf["end"]["sum_received"]["bits_per_second"] / 8 / 1e9
rows = []
for floats in map(int, sys.argv[3:]):
    local = json.load(open(os.path.join(tmp, f"local-{floats}.json")))
    row = {"payload_bytes": local["payload_bytes"],
           "in_process_round_trip_ms": local["round_trip_ms"]["median"],
           "in_process_push_pull_GBps": local["push_pull_GBps"]}
    for transport in ("tcp", "socket", "shm", "caf"):
        r = json.load(open(os.path.join(tmp, f"{transport}-{floats}.json")))
        row[transport] = {"transport": r["transport"], "round_trip_ms": r["round_trip_ms"],
                          "push_pull_GBps": r["push_pull_GBps"],
                          "bytes_moved_GBps": r["bytes_moved_GBps"],
                          "scoped_round_trip_ms": r["scoped_round_trip_ms"]["median"],
                          "in_flight": r["in_flight"],
                          "pipelined_ms_per_push_pull": r["pipelined_ms_per_push_pull"],
                          # of every push the run sent the shard: applied as they arrived
                          # (request_progress.hpp), replies sent ahead in parts
                          "shard_pushes": r.get("shard_pushes"),
                          "shard_pushes_streamed": r.get("shard_pushes_streamed"),
                          "shard_replies_streamed": r.get("shard_replies_streamed")}
        row[transport]["worker_per_round_trip"] = r["worker_per_round_trip"]
        shard = dict(r["shard_per_round_trip"])
        for line in open(os.path.join(tmp, f"serve-{transport}-{floats}.log")):
            if line.startswith("bench shard copied_payload_bytes "):
                shard["copied_bytes"] = int(line.split()[-1]) / r["push_pulls_sent"]
        row[transport]["shard_per_round_trip"] = shard
        if "raw_link" in r:
            row[transport]["raw_link"] = r["raw_link"]
        row[transport]["copied_bytes_per_round_trip"] = (
            r["worker_per_round_trip"]["copied_bytes"] + shard.get("copied_bytes", float("nan")))
    hot, cold = local["components_ms"]["memcpy"], local["components_ms"]["memcpy_cold"]
    row["shm"]["ratio_to_memcpy"] = row["shm"]["round_trip_ms"]["median"] / hot
    row["shm"]["ratio_to_memcpy_cold"] = row["shm"]["round_trip_ms"]["median"] / cold
    row["in_process_per_round_trip"] = local["worker_per_round_trip"]
    row["in_process_ratio_to_memcpy"] = local["round_trip_ms"]["median"] / hot
    row["in_process_ratio_to_memcpy_cold"] = local["round_trip_ms"]["median"] / cold
    for family, key in (("tcp", "tcp"), ("unix", "socket")):
        f = json.load(open(os.path.join(tmp, f"floor-{family}-{floats}.json")))
        row[key]["floor_round_trip_ms"] = f["round_trip_ms"]["median"]
        row[key]["ratio_to_floor"] = row[key]["round_trip_ms"]["median"] / f["round_trip_ms"]["median"]
        # The CPU both sides spend per round trip against the floor's two processes: at the
        # floor's own overlap of its sides, a round trip cannot come nearer the floor than this.
        floor_cpu = f["cpu_ms_per_round_trip"]["client"] + f["cpu_ms_per_round_trip"]["echo"]
        row[key]["floor_cpu_ms"] = floor_cpu
        row[key]["cpu_ratio_to_floor"] = (row[key]["worker_per_round_trip"]["cpu_ms"]
                                          + row[key]["shard_per_round_trip"]["cpu_ms"]) / floor_cpu
        if "raw_link" in row[key]:
            row[key]["raw_link"]["ratio_to_floor"] = (row[key]["raw_link"]["round_trip_ms"]["median"]
                                                      / f["round_trip_ms"]["median"])
    row["components_ms"] = local["components_ms"]
    rows.append(row)
four = next((r for r in rows if abs(r["payload_bytes"] - 4 * 2**20) < 8192), None)
ratio = lambda t: 1.7 / four[t]["round_trip_ms"]["median"]
result = {"bench": "transport_processes", "loopback_tcp_GBps_iperf3": tcp, "sizes": rows,
          "ps_lite_4MiB_push_pull_ms": 1.7,
          "ratio_vs_ps_lite_4MiB": {t: ratio(t) for t in ("tcp", "socket", "shm", "caf")} if four else None,
          "memcpy_references": "ratio_to_memcpy, in_process_ratio_to_memcpy: over components_ms.memcpy, "
                               "one hot pair of buffers copied again and again (in cache); "
                               "*_cold: over components_ms.memcpy_cold, pairs rotated through >= 96 MiB "
                               "(source and destination not in cache); targets: shm <= 4x, in-process <= 2.5x",
          "load_average": os.getloadavg()[0],
          "request_part_bytes": os.environ.get("REQUEST_PART_BYTES") or "the shard's default",
          "reply_part_bytes": os.environ.get("REPLY_PART_BYTES") or "the shard's default"}
json.dump(result, open(out, "w"), indent=1)
print(f"loopback TCP (iperf3): {tcp:.2f} GB/s; push+pull round trip, median ms (GB/s of payload):")
print(f"{'payload':>10} {'in-process':>17} {'link, TCP':>17} {'link, socket':>17} {'link, shm':>17} {'CAF only':>17}")
cell = lambda ms, gbps: f"{ms:8.3f} ({gbps:5.2f})"
for r in rows:
    print(f"{r['payload_bytes']/2**20:6.3f} MiB {cell(r['in_process_round_trip_ms'], r['in_process_push_pull_GBps']):>17} "
          + " ".join(f"{cell(r[t]['round_trip_ms']['median'], r[t]['push_pull_GBps']):>17}" for t in ("tcp", "socket", "shm", "caf")))
print("round trip over one memcpy of the payload, hot (in cache) / cold (from and to memory):")
for r in rows:
    c = r["components_ms"]
    print(f"{r['payload_bytes']/2**20:6.3f} MiB memcpy {c['memcpy']:.3f} / {c['memcpy_cold']:.3f} ms; "
          f"shm {r['shm']['ratio_to_memcpy']:.2f}x / {r['shm']['ratio_to_memcpy_cold']:.2f}x (target 4x); "
          f"in-process {r['in_process_ratio_to_memcpy']:.2f}x / {r['in_process_ratio_to_memcpy_cold']:.2f}x (target 2.5x)")
print("x floor: the round trip over the floor's echo (tcp, socket); for shm, over one hot memcpy of the payload")
print(f"{'payload':>10} {'path':>7} {'rt ms':>8} {'x floor':>8} {'worker CPU ms':>14} {'shard CPU ms':>13} "
      f"{'faults w/s':>11} {'copied w/s (payloads)':>22}")
for r in rows:
    for t in ("tcp", "socket", "shm"):
        x, w, s = r[t], r[t]["worker_per_round_trip"], r[t]["shard_per_round_trip"]
        n = r["payload_bytes"]
        ratio = x["ratio_to_floor"] if t != "shm" else x["ratio_to_memcpy"]
        print(f"{n/2**20:6.3f} MiB {t:>7} {x['round_trip_ms']['median']:8.3f} {ratio:8.2f} "
              f"{w['cpu_ms']:14.3f} {s['cpu_ms']:13.3f} {w['minor_faults']:5.0f}/{s['minor_faults']:<5.0f} "
              f"{w['copied_bytes']/n:10.2f}/{s.get('copied_bytes', float('nan'))/n:<10.2f}")
print("the raw link (no actors on the worker's side; push by reference, reply received in place):")
for r in rows:
    for t in ("tcp", "socket"):
        x = r[t].get("raw_link")
        if not x: continue
        w, n = x["worker_per_round_trip"], r["payload_bytes"]
        print(f"{n/2**20:6.3f} MiB {t:>7} {x['round_trip_ms']['median']:8.3f} {x['ratio_to_floor']:8.2f} "
              f"{w['cpu_ms']:14.3f} {x['shard_per_round_trip']['cpu_ms']:13.3f} "
              f"{w['minor_faults']:5.0f}/{x['shard_per_round_trip']['minor_faults']:<5.0f} {w['copied_bytes']/n:10.2f}")
print("CPU of both sides per round trip over the floor's (client + echo): at the floor's overlap of")
print("its two sides, the nearest a round trip can come to the floor")
for r in rows:
    print(f"{r['payload_bytes']/2**20:6.3f} MiB " + "  ".join(
        f"{t} {r[t]['floor_cpu_ms']:.3f} ms floor CPU, {r[t]['cpu_ratio_to_floor']:.2f}x" for t in ("tcp", "socket")))
if four:  # (-s without 4 MiB: no 4 MiB lines)
    print(f"floor (the same sockets echoing frames), 4 MiB: tcp {four['tcp']['floor_round_trip_ms']:.3f} ms, "
          f"socket {four['socket']['floor_round_trip_ms']:.3f} ms")
    print(f"4 MiB with {four['tcp']['in_flight']} push+pulls in flight, ms each: "
          + ", ".join(f"{t} {four[t]['pipelined_ms_per_push_pull']:.3f}" for t in ("tcp", "socket", "shm", "caf")))
    print("4 MiB vs ps-lite's 1.7 ms: "
          + ", ".join(f"{t} {v:.2f}x" for t, v in result["ratio_vs_ps_lite_4MiB"].items()))
print(f"-> {out}")
PY
