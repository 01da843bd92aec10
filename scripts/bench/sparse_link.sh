#!/usr/bin/env bash
# Usage: scripts/bench/sparse_link.sh [-o FILE] [-b BUILD_DIR] [-n KEYS_A] [-m KEYS_B] [-r REPEATS] [-t TRANSPORTS]
#
# ps-lite's benchmark shape between a worker process and a shard process on loopback
# (actorps_bench_sparse_link; builds nothing): ONE push of N distinct keys' rows (the shard
# creates each row and applies Adagrad), a second push of the same keys (updates), ONE pull of
# them, each after a warm-up round on other keys and repeated REPEATS times on fresh keys
# (medians). (a) KEYS_A keys x dim 1 (default 10000000), next to dmlc/ps-lite's figures on this
# machine (push 117 ms, pull 166 ms; its server stores nothing); (b) KEYS_B keys x dim 16
# (default 1000000). Over the data link on loopback TCP and on a local socket (TRANSPORTS,
# default "tcp socket"). Writes one JSON object to FILE (default BUILD_DIR/bench/sparse_link.json,
# BUILD_DIR default build) and prints a table. About 1 min at the default sizes (the shard
# process peaks near 2 GB: (1 + REPEATS) x KEYS_A rows); `-n 20000 -m 1000000 -r 1` (CTest's
# smoke test) takes a few seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" keys_a=10000000 keys_b=1000000 repeats=3 transports="tcp socket"
while getopts "o:b:n:m:r:t:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    n) keys_a="$OPTARG" ;;
    m) keys_b="$OPTARG" ;;
    r) repeats="$OPTARG" ;;
    t) transports="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
(( $# == 0 )) || usage
out="$(realpath -m "${out:-$build/bench/sparse_link.json}")"

name=$(basename "$0")
. "$root/scripts/bench/bench_lib.sh"
bench="$build/actorps_bench_sparse_link"
require_bench "$bench"

tmp="$(mktemp -d)"
server=""
trap '[[ -n "$server" ]] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT

# serve FLAGS...: starts a shard process and sets $server and $port once it listens (blocks on
# its log until the line comes, at most 60 s, or the process ends).
serve() {
  rm -f "$tmp/serve.log"  # else tail may read the previous server's line before it is truncated
  "$bench" --serve "$@" 2>"$tmp/serve.log" &
  server=$!
  local line
  grep -m1 -E '^bench shard serving on 127\.0\.0\.1:[0-9]+$' \
    < <(timeout 60 tail -n +1 -F --pid="$server" "$tmp/serve.log" 2>/dev/null) >"$tmp/ready" || true
  line=$(<"$tmp/ready")
  port=${line##*:}
  [[ -n "$line" ]] && return
  echo "$name: the shard process did not start:" >&2
  cat "$tmp/serve.log" >&2
  exit 1
}

# Ends the shard process: the worker stopped its shard, so it exits by itself (a shard that
# hangs is a bug the ctest timeout reports).
stop_server() {
  wait "$server" 2>/dev/null || true
  server=""
}

for shape in a b; do
  if [[ $shape == a ]]; then keys=$keys_a dim=1; else keys=$keys_b dim=16; fi
  for transport in $transports; do
    case $transport in tcp) flag=--tcp-link ;; socket) flag="" ;; *) usage ;; esac
    serve $flag
    components=""
    [[ $transport == "${transports%% *}" ]] && components=--components  # once per shape
    echo "$name: ($shape) $keys keys x dim $dim over $transport..." >&2
    run_bench 900 "$tmp/$shape-$transport.json" "$bench" --connect "127.0.0.1:$port" \
      --keys "$keys" --dim "$dim" --repeats "$repeats" $components
    stop_server
  done
done

python3 - "$tmp" "$out" "$transports" <<'PY'
import json, os, sys
tmp, out, transports = sys.argv[1], sys.argv[2], sys.argv[3].split()
ps_lite = {"push_ms": 117.0, "pull_ms": 166.0}
result = {"bench": "sparse_link", "ps_lite_10M_dim1_ms": ps_lite, "a": {}, "b": {}}
for shape in ("a", "b"):
    for t in transports:
        r = json.load(open(os.path.join(tmp, f"{shape}-{t}.json")))
        if shape == "a":
            r["ratio_to_ps_lite"] = {  # > 1: slower than ps-lite
                "push_create": r["push_create"]["ms"] / ps_lite["push_ms"],
                "push_update": r["push_update"]["ms"] / ps_lite["push_ms"],
                "pull": r["pull"]["ms"] / ps_lite["pull_ms"]}
        result[shape][t] = r
result["load_average_end"] = os.getloadavg()[0]
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=1)

print("push (create rows, update rows) and pull of N keys, one message each; medians "
      "(ms, M keys/s, GB/s of rows); split ms = encode / shard / transfer / decode")
for shape in ("a", "b"):
    for t in transports:
        r = result[shape][t]
        print(f"({shape}) {r['keys']} keys x dim {r['dim']}, {r['transport']}, "
              f"messages: push {r['message_bytes']['push'] / 1e6:.1f} MB, "
              f"pull {r['message_bytes']['pull'] / 1e6:.1f} MB, "
              f"pull reply {r['message_bytes']['pull_reply'] / 1e6:.1f} MB "
              f"(load {r['load_average_before']:.1f})")
        for op in ("push_create", "push_update", "pull"):
            o, s = r[op], r[op]["split_ms"]
            ratio = f"  {r['ratio_to_ps_lite'][op]:.2f}x ps-lite" if shape == "a" else ""
            print(f"  {op:12s} {o['ms']:9.1f} ms {o['keys_per_s'] / 1e6:7.2f} Mkeys/s "
                  f"{o['row_payload_GBps']:6.3f} GB/s  split {s['encode']:.1f} / {s['shard']:.1f} / "
                  f"{s['transfer']:.1f} / {s['decode']:.1f}{ratio}")
        sh = r["shard"]
        print(f"  shard: {sh['table_rows']} rows, {sh['bytes_per_row']:.1f} B/row (table_bytes), "
              f"peak RSS {sh['peak_rss_bytes'] / 2**30:.2f} GiB "
              f"({sh['peak_rss_bytes_per_row']:.1f} B/row)")
        if "shard_components_ms" in r:
            c = r["shard_components_ms"]
            print("  shard's pieces in one process, ms: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in c.items()))
PY
echo "$name: wrote $out" >&2
