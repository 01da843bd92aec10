#!/usr/bin/env bash
# Secure by default:
#  1. actorps ps|worker|evaluator|chief|run without certificates refuse to start (exit 2, naming
#     --tls-cert and --insecure, before listening); with --insecure they start, saying so in a
#     WARNING line; --insecure with --tls-* is refused.
#  2. scripts/launch_local.sh with no flags makes a CA and per-task certificates and runs a TLS
#     cluster: the workers' data links are shared memory proven over TLS, no task warns of a
#     cluster without TLS, and the run ends with its summary.
# usage: tests/secure_default_test.sh ACTORPS_BINARY
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/actorps-secure.XXXXXX)
. "$root/tests/cluster_test_lib.sh"

read -r -a ports <<< "$("$python" "$free_port_pairs" 3)"
cat > "$dir/c.json" <<JSON
{"cluster": {"chief": ["127.0.0.1:${ports[0]}"], "ps": ["127.0.0.1:${ports[1]}"],
             "worker": ["127.0.0.1:${ports[2]}"], "evaluator": ["127.0.0.1:1"]}}
JSON

echo "== 1. no certificates: refused; --insecure: started, with a warning"
for task in ps:0 worker:0 evaluator:0 chief:0; do
  for command in "${task%%:*}" run; do
    set +e
    "$bin" "$command" --cluster "$dir/c.json" --task "$task" --connect-timeout 1 > "$dir/out.log" 2>&1
    status=$?
    set -e
    [ "$status" = 2 ] || fail "actorps $command ($task) without certificates exited $status: $(cat "$dir/out.log")"
    grep -q -- "no TLS certificates: give --tls-cert, --tls-key and --tls-ca" "$dir/out.log" \
      && grep -q -- "or --insecure" "$dir/out.log" || fail "actorps $command: no clear refusal: $(cat "$dir/out.log")"
    grep -q "serving on\|data link on" "$dir/out.log" && fail "actorps $command listened before refusing"
  done
done
# --insecure: the ps task starts (and, its chief never there, exits 138 after the timeout).
set +e
"$bin" ps --cluster "$dir/c.json" --task ps:0 --connect-timeout 1 --insecure > "$dir/insecure.log" 2>&1
status=$?
set -e
[ "$status" = 138 ] || fail "actorps ps --insecure exited $status"
grep -q "^WARNING: ps:0: --insecure: no TLS" "$dir/insecure.log" || fail "no warning with --insecure"
grep -q "data link on" "$dir/insecure.log" || fail "actorps ps --insecure did not start"
"$root/scripts/make_certs.sh" "$dir/certs" ps:0 > /dev/null
set +e
"$bin" ps --cluster "$dir/c.json" --task ps:0 --insecure --tls-cert "$dir/certs/ps-0.pem" \
  --tls-key "$dir/certs/ps-0.key" --tls-ca "$dir/certs/ca.pem" > "$dir/both.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] && grep -q -- "--insecure with --tls-cert" "$dir/both.log" || fail "--insecure with --tls-*: $status"

echo "== 2. launch_local.sh with no flags: a TLS cluster"
ACTORPS_BINARY=$bin "$root/scripts/launch_local.sh" --ps 2 --workers 2 --connect-timeout 30 -- \
  --dataset synthetic --model 784-32-10 --steps 200 --no-progress --metrics "$dir/m.jsonl" \
  > "$dir/launch.log" 2>&1 || fail "launch_local.sh with no flags exited non-zero"
grep -q '"event":"summary"' "$dir/m.jsonl" || fail "no summary"
for task in worker:0 worker:1 evaluator:0; do
  grep -q "^$task | .*data links: shared memory, proven over TLS, shared memory, proven over TLS" "$dir/launch.log" \
    || fail "$task: $(grep "^$task | .*data links" "$dir/launch.log")"
done
grep -q "NO TLS\|--insecure" "$dir/launch.log" && fail "a task ran without TLS: $(grep "NO TLS\|--insecure" "$dir/launch.log" | head -3)"
echo "PASS"
