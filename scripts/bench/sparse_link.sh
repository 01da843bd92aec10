#!/usr/bin/env bash
# Usage: scripts/bench/sparse_link.sh [-o FILE] [-b BUILD_DIR] [-s KEYS_S] [-n KEYS_A] [-m KEYS_B] [-r REPEATS] [-t TRANSPORTS]
#
# ps-lite's benchmark shape between a worker process and a shard process on loopback
# (actorps_bench_sparse_link; builds nothing): ONE push of N distinct keys' rows (the shard
# creates each row and applies Adagrad), a second push of the same keys (updates), ONE pull of
# them, each after a warm-up round on other keys and repeated on fresh keys (medians).
# (s) KEYS_S keys x dim 1 (default 100000, 5 x REPEATS rounds: each is short); (a) KEYS_A keys
# x dim 1 (default 10000000), next to dmlc/ps-lite's figures on this machine (push 117 ms, pull
# 166 ms, i.e. 85 M and 60 M keys/s; its server stores nothing); (b) KEYS_B keys x dim 16
# (default 1000000); REPEATS rounds each (default 3). Over the data link on loopback TCP and on
# a local socket (TRANSPORTS, default "tcp socket"). Writes one JSON object to FILE (default
# BUILD_DIR/bench/sparse_link.json, BUILD_DIR default build): every run, and under "keys_per_s"
# each shape's push (create, update) and pull rates with ps-lite's, and the message-size cliff
# (the rate at KEYS_A over the rate at KEYS_S: 1 = none, below 1 = slower per key in larger
# messages), split into ns per key in the shard and on the way (encode, transfer, decode).
# Prints a table. About 2 min at the default sizes (the shard process peaks near
# 2 GB: (1 + REPEATS) x KEYS_A rows); `-n 20000 -m 1000000 -r 1` (CTest's smoke test) takes a
# few seconds.
set -euo pipefail

usage() { sed -n '2,2p' "$0" | sed 's/^# //' >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" out="" keys_s=100000 keys_a=10000000 keys_b=1000000 repeats=3 transports="tcp socket"
while getopts "o:b:s:n:m:r:t:h" opt; do
  case "$opt" in
    o) out="$OPTARG" ;;
    b) build="$(realpath -m "$OPTARG")" ;;
    s) keys_s="$OPTARG" ;;
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

for shape in s a b; do
  rounds=$repeats
  case $shape in
    s) keys=$keys_s dim=1 rounds=$((5 * repeats)) ;;
    a) keys=$keys_a dim=1 ;;
    b) keys=$keys_b dim=16 ;;
  esac
  for transport in $transports; do
    case $transport in tcp) flag=--tcp-link ;; socket) flag="" ;; *) usage ;; esac
    serve $flag
    components=""
    [[ $transport == "${transports%% *}" ]] && components=--components  # once per shape
    echo "$name: ($shape) $keys keys x dim $dim over $transport..." >&2
    run_bench 900 "$tmp/$shape-$transport.json" "$bench" --connect "127.0.0.1:$port" \
      --keys "$keys" --dim "$dim" --repeats "$rounds" $components
    stop_server
  done
done

python3 - "$tmp" "$out" "$transports" <<'PY'
import json, os, sys
tmp, out, transports = sys.argv[1], sys.argv[2], sys.argv[3].split()
ps_lite = {"push_ms": 117.0, "pull_ms": 166.0}
ps_lite_rate = {"push": 10e6 / (ps_lite["push_ms"] * 1e-3), "pull": 10e6 / (ps_lite["pull_ms"] * 1e-3)}
shapes = ("s", "a", "b")
ops = ("push_create", "push_update", "pull")
result = {"bench": "sparse_link", "ps_lite_10M_dim1_ms": ps_lite, "s": {}, "a": {}, "b": {}}
for shape in shapes:
    for t in transports:
        r = json.load(open(os.path.join(tmp, f"{shape}-{t}.json")))
        if shape == "a":
            r["ratio_to_ps_lite"] = {  # > 1: slower than ps-lite
                "push_create": r["push_create"]["ms"] / ps_lite["push_ms"],
                "push_update": r["push_update"]["ms"] / ps_lite["push_ms"],
                "pull": r["pull"]["ms"] / ps_lite["pull_ms"]}
        result[shape][t] = r
# The rates side by side: ps-lite's at 10 M keys, and the cliff from (s) to (a).
rates = {"ps_lite_10M_dim1": ps_lite_rate}
for t in transports:
    rates[t] = {shape: {"keys": result[shape][t]["keys"], "dim": result[shape][t]["dim"],
                        **{op: result[shape][t][op]["keys_per_s"] for op in ops}}
                for shape in shapes}
    rates[t]["cliff_a_over_s"] = {op: rates[t]["a"][op] / rates[t]["s"][op] for op in ops}
    # Where a cliff would come from: ns per key in the shard's handling, and on the way
    # (encode, transfer, decode): the second is the message's size at work, the first the
    # table's (a larger table misses the cache more).
    rates[t]["ns_per_key"] = {
        shape: {op: {"shard": result[shape][t][op]["split_ms"]["shard"] * 1e6 / result[shape][t]["keys"],
                     "wire": (result[shape][t][op]["ms"] - result[shape][t][op]["split_ms"]["shard"])
                             * 1e6 / result[shape][t]["keys"]}
                for op in ops}
        for shape in shapes}
    rates[t]["a_over_ps_lite"] = {op: rates[t]["a"][op] / ps_lite_rate["pull" if op == "pull" else "push"]
                                  for op in ops}
result["keys_per_s"] = rates
result["load_average_end"] = os.getloadavg()[0]
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(result, open(out, "w"), indent=1)

print("push (create rows, update rows) and pull of N keys, one message each; medians "
      "(ms, M keys/s, GB/s of rows); split ms = encode / shard / transfer / decode")
for shape in shapes:
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
print(f"M keys/s: ps-lite at 10 M keys push {ps_lite_rate['push'] / 1e6:.1f}, "
      f"pull {ps_lite_rate['pull'] / 1e6:.1f}")
for t in transports:
    k = rates[t]
    print(f"  {t:6s} " + "; ".join(
        f"({s}) {k[s]['keys']} x {k[s]['dim']}: " + " / ".join(f"{k[s][op] / 1e6:.2f}" for op in ops)
        for s in shapes) + "  (push create / update / pull)")
    print(f"         cliff (a)/(s): " + " / ".join(f"{k['cliff_a_over_s'][op]:.2f}" for op in ops)
          + "; (a)/ps-lite: " + " / ".join(f"{k['a_over_ps_lite'][op]:.3f}" for op in ops))
    for s in ("s", "a"):
        print(f"         ({s}) ns/key shard | wire: " + " / ".join(
            f"{k['ns_per_key'][s][op]['shard']:.0f} | {k['ns_per_key'][s][op]['wire']:.0f}" for op in ops))
PY
echo "$name: wrote $out" >&2
