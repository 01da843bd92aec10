#!/usr/bin/env bash
# Mutual TLS on a cluster of processes on 127.0.0.1 (scripts/launch_local.sh --tls).
#   accuracy: a sync run with TLS trains to exactly the final accuracy of the same run without,
#             and only the run without TLS warns that the cluster is unauthenticated;
#   flags: --tls-cert, --tls-key and --tls-ca are all three or none, and each file is checked at
#             start: exit 2 naming the flag and the file, before anything listens;
#   no-cert | self-signed | other-ca: while a TLS cluster trains, an intruder dials the chief's
#             and ps:0's CAF ports (openssl s_client with no certificate; with a self-signed one;
#             an actorps worker with a whole set of another CA's files) and ps:0's data port
#             (openssl s_client with the same identity, sending a hello frame): each attempt is
#             refused, logged with the intruder's address and the reason, the intruder never
#             joins, and the cluster trains to the end;
#   insider: a process with worker:1's own certificate pushes 1000.0 everywhere as worker 1 at
#             its clock (tests/insider_push.cpp): the default --gradient-norm-bound refuses it,
#             its push as worker 0 is refused as not authorised on the data link, and the summary
#             counts exactly those (norms_refused 1, refused_unauthorised 1); the run's accuracy
#             stays and worker:1 is never displaced.
# usage: tests/tls_cluster_test.sh PART [path/to/actorps] [path/to/actorps_insider_push]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
part=${1:?usage: tls_cluster_test.sh flags|accuracy|no-cert|self-signed|other-ca|insider [actorps] [insider]}
bin=${2:-$root/build/actorps}
insider=${3:-$root/build/tests/actorps_insider_push}
dir=$(mktemp -d /tmp/actorps-tls.XXXXXX)
. "$root/tests/cluster_test_lib.sh"
export ACTORPS_BINARY=$bin
train=(--dataset synthetic --model 784-64-10 --no-progress)

if [ "$part" = flags ]; then
  cluster "$dir/c.json"
  "$root/scripts/make_certs.sh" "$dir/certs" ps:0 worker:0 > /dev/null
  c=$dir/certs
  expect_usage() {  # expect_usage MESSAGE FLAGS...: `actorps ps` exits 2 saying MESSAGE
    local want=$1; shift
    set +e; "$bin" ps --cluster "$dir/c.json" --task ps:0 --connect-timeout 2 "$@" > "$dir/out.log" 2>&1; status=$?; set -e
    [ "$status" = 2 ] || fail "exit $status, not 2, for $*: $(cat "$dir/out.log")"
    grep -qF -- "$want" "$dir/out.log" || fail "no '$want' for $*: $(cat "$dir/out.log")"
    grep -q "serving on\|data link on" "$dir/out.log" && fail "it listened before refusing $*"
    return 0
  }
  expect_usage "--tls-key is missing" --tls-cert "$c/ps-0.pem" --tls-ca "$c/ca.pem"
  expect_usage "--tls-ca is missing" --tls-cert "$c/ps-0.pem" --tls-key "$c/ps-0.key"
  expect_usage "--tls-cert is missing" --tls-key "$c/ps-0.key" --tls-ca "$c/ca.pem"
  expect_usage "--tls-cert $c/nowhere.pem: cannot read it" --tls-cert "$c/nowhere.pem" --tls-key "$c/ps-0.key" --tls-ca "$c/ca.pem"
  expect_usage "--tls-ca $c/ps-0.key: not a PEM certificate" --tls-cert "$c/ps-0.pem" --tls-key "$c/ps-0.key" --tls-ca "$c/ps-0.key"
  expect_usage "--tls-key $c/worker-0.key is not the key of --tls-cert $c/ps-0.pem" --tls-cert "$c/ps-0.pem" --tls-key "$c/worker-0.key" --tls-ca "$c/ca.pem"
  "$root/scripts/make_certs.sh" "$dir/other" ps:0 > /dev/null
  expect_usage "--tls-cert $dir/other/ps-0.pem does not verify against --tls-ca $c/ca.pem" --tls-cert "$dir/other/ps-0.pem" --tls-key "$dir/other/ps-0.key" --tls-ca "$c/ca.pem"
  # `actorps run` (every replica's command) takes them too.
  set +e; "$bin" run --cluster "$dir/c.json" --task ps:0 --tls-cert "$c/ps-0.pem" > "$dir/out.log" 2>&1; status=$?; set -e
  [ "$status" = 2 ] && grep -q -- "--tls-key is missing" "$dir/out.log" || fail "actorps run: $status $(cat "$dir/out.log")"
  echo "PASS"
  exit 0
fi

if [ "$part" = accuracy ]; then
  for tls in plain tls; do
    flags=(--insecure); [ "$tls" = tls ] && flags=(--tls)
    "$root/scripts/launch_local.sh" ${flags[@]+"${flags[@]}"} --ps 2 --workers 2 --connect-timeout 20 -- \
      "${train[@]}" --steps 300 --mode sync --metrics "$dir/$tls.jsonl" > "$dir/$tls.log" 2>&1 \
      || fail "launch_local.sh ${flags[*]} exited non-zero"
  done
  plain=$(summary_field "$(grep '"event":"summary"' "$dir/plain.jsonl")" final_test_accuracy)
  tls=$(summary_field "$(grep '"event":"summary"' "$dir/tls.jsonl")" final_test_accuracy)
  echo "final test accuracy: plain $plain, tls $tls"
  [ "$plain" = "$tls" ] || fail "accuracy with TLS $tls differs from $plain without"
  "$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" "$tls" || fail "accuracy $tls"
  for task in chief:0 ps:0 ps:1 worker:0 worker:1 evaluator:0; do
    n=$(grep -c "^$task | .* WARN .*NO TLS: this cluster is unauthenticated" "$dir/plain.log" || true)
    [ "$n" = 1 ] || fail "$task warned $n times without TLS (expected once)"
  done
  grep -q "NO TLS" "$dir/tls.log" && fail "a TLS task warned that the cluster is unauthenticated"
  # Co-located tasks: the data links are shared memory, entered with a ticket taken over mutual
  # TLS on the local socket, and nobody is refused.
  for task in worker:0 worker:1 evaluator:0; do
    grep -q "^$task | .*data links: shared memory, proven over TLS, shared memory, proven over TLS" "$dir/tls.log" \
      || fail "$task does not use TLS data links: $(grep "^$task | .*data links" "$dir/tls.log")"
  done
  grep -q "refused a data" "$dir/tls.log" && fail "a ps task refused its own client: $(grep "refused a data" "$dir/tls.log")"
  # (a peer's connection that ends before its handshake does is logged too: not a refusal of its
  # certificate, see netns_cluster_test.sh)
  if grep "refused a connection" "$dir/tls.log" | grep -qv "unexpected eof while reading"; then
    fail "a TLS task refused one of its own peers: $(grep "refused a connection" "$dir/tls.log")"
  fi
  echo "PASS"
  exit 0
fi

# A TLS cluster that trains long enough for the intruders (worker:0 slowed down: 600 clocks of
# at least 20 ms, 12 s; the other-ca intruder alone retries for 3 s before the data port attack,
# and at 5 ms a clock a quiet machine ended the run first)
# (the insider races worker:1 for its clock: worker:1 is the slow one then)
slow=worker:0=20; [ "$part" = insider ] && slow=worker:1=20
"$root/scripts/launch_local.sh" --tls --keep-certs "$dir/certs" --keep-cluster "$dir/c.json" \
  --ps 2 --workers 2 --connect-timeout 20 -- "${train[@]}" --steps 600 --slow "$slow" \
  --metrics "$dir/m.jsonl" > "$dir/cluster.log" 2>&1 &
launcher=$!; pids+=($launcher)
await_event "$dir/m.jsonl" '"event":"train"'
chief_port=$(port_of "$dir/c.json" chief 0)
ps_port=$(port_of "$dir/c.json" ps 0)
data_port=$((ps_port + 1))  # launch_local.sh gives no --data-port: the task's port + 1
# attack_data_port IDENTITY_FLAGS... : a TLS client with that identity (trusting the cluster's
# CA) sends a hello frame for shard 0 to ps:0's data port; the shard must answer nothing.
attack_data_port() {
  "$python" -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<IHHQqqQ", 0x4c535041, 2, 1, 0, 0, 10000, 0))' \
    > "$dir/hello.bin"
  timeout 20 openssl s_client -connect "127.0.0.1:$data_port" -CAfile "$dir/certs/ca.pem" -ign_eof "$@" \
    < "$dir/hello.bin" > "$dir/data-intruder.log" 2>&1 || true
  # A hello reply (kind 5) would carry the frame magic "APSL"; s_client prints what it reads.
  grep -q "APSL" "$dir/data-intruder.log" && fail "the data port answered the intruder's hello"
  return 0
}

case $part in
  no-cert|self-signed)
    id=(); reason="peer did not return a certificate"
    if [ "$part" = self-signed ]; then
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=worker:1 -keyout "$dir/self.key" -out "$dir/self.pem" 2>/dev/null
      id=(-cert "$dir/self.pem" -key "$dir/self.key"); reason="certificate verify failed"
    fi
    for port in "$chief_port" "$ps_port"; do
      # The intruder trusts the cluster's CA (a public certificate), so the refusal is the task's.
      printf 'hello\n' | timeout 20 openssl s_client -connect "127.0.0.1:$port" -CAfile "$dir/certs/ca.pem" \
        ${id[@]+"${id[@]}"} > "$dir/intruder-$port.log" 2>&1 || true
    done
    for who in "chief:0 | .* chief" "ps:0 | .* ps:0"; do
      await_event "$dir/cluster.log" "^$who: refused a connection from 127\.0\.0\.1:[0-9]+: no TLS handshake with the cluster's certificates \(.*$reason" 20
    done
    attack_data_port ${id[@]+"${id[@]}"}
    await_event "$dir/cluster.log" "^ps:0 \| .* ps:0: refused a data connection from 127\.0\.0\.1:[0-9]+: TLS handshake failed: .*$reason" 20
    ;;
  other-ca)
    "$root/scripts/make_certs.sh" "$dir/other" worker:1 > /dev/null
    # The cluster as the intruder sees it, but with a port of its own to listen on.
    "$python" - "$dir/c.json" "$dir/intruder.json" $("$python" "$free_port_pairs" 1) <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["cluster"]["worker"][1] = "127.0.0.1:" + sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PY
    set +e
    "$bin" worker --cluster "$dir/intruder.json" --task worker:1 --connect-timeout 3 \
      --tls-cert "$dir/other/worker-1.pem" --tls-key "$dir/other/worker-1.key" --tls-ca "$dir/other/ca.pem" \
      > "$dir/intruder.log" 2>&1
    status=$?
    set -e
    [ "$status" = 138 ] || fail "the intruder exited $status, not 138 (chief unreachable)"
    grep -q "cannot reach 127.0.0.1:$chief_port: gave up .*TLS handshake: certificate verify failed" "$dir/intruder.log" \
      || fail "the intruder does not say that the chief's certificate failed: $(cat "$dir/intruder.log")"
    await_event "$dir/cluster.log" "^chief:0 \| .* chief: refused a connection from 127\.0\.0\.1:[0-9]+: no TLS handshake with the cluster's certificates \(.*unknown ca" 20
    attack_data_port -cert "$dir/other/worker-1.pem" -key "$dir/other/worker-1.key"
    await_event "$dir/cluster.log" "^ps:0 \| .* ps:0: refused a data connection from 127\.0\.0\.1:[0-9]+: TLS handshake failed: .*certificate verify failed" 20
    ;;
  insider)
    # Past the shard's warm-up (16 pushes): worker 1 at clock 30.
    await_event "$dir/m.jsonl" '"event":"train","worker":1,"clock":30,' 60
    timeout 60 "$insider" "127.0.0.1:$ps_port" "$dir/certs/worker-1.pem" "$dir/certs/worker-1.key" \
      "$dir/certs/ca.pem" 1 0 30 > "$dir/insider.log" 2>&1 || fail "the insider: $(cat "$dir/insider.log")"
    grep -q "push as worker 1 for clock [0-9]*: gradient_norm_beyond: dense gradient norm" "$dir/insider.log" \
      || fail "no norm refusal: $(cat "$dir/insider.log")"
    ;;
  *) fail "unknown part $part" ;;
esac

await_exit "$launcher" 120
[ "$status" = 0 ] || fail "the TLS cluster exited $status after the intruder"
line=$(grep '"event":"summary"' "$dir/m.jsonl") || fail "no summary event"
[ "$(summary_field "$line" clocks)" = 600 ] || fail "clocks: $line"
"$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" \
  "$(summary_field "$line" final_test_accuracy)" || fail "accuracy: $line"
[ "$(grep -c "chief: worker:1 joined" "$dir/cluster.log")" = 1 ] || fail "worker:1 joined more than once"
grep -q "chief: worker:1 lost\|chief: worker:1 left\|replac" "$dir/cluster.log" && fail "the intruder displaced worker:1"
grep -q "data link is still plain\|still plain TCP" "$dir/cluster.log" && fail "a TLS ps task says its data link is plain"
if [ "$part" = insider ]; then
  [ "$(summary_field "$line" norms_refused)" = 1 ] || fail "norms_refused: $line"
  [ "$(summary_field "$line" refused_unauthorised)" = 1 ] || fail "refused_unauthorised: $line"
  [ "$(grep -c "^ps:0 | .*refused a data request .*(worker:1).*may not push_pull as worker 0" "$dir/cluster.log")" = 1 ] \
    || fail "ps:0 did not log the refusal once: $(grep "refused" "$dir/cluster.log")"
  grep -q "refused: 0 pushes beyond --max-gradient, 1 pushes beyond --gradient-norm-bound, .* 1 messages not authorised" "$dir/cluster.log" \
    || fail "the summary line: $(grep "refused:" "$dir/cluster.log")"
  echo "PASS (insider: $(grep -c "" "$dir/insider.log") lines; $line)"
  exit 0
fi
echo "PASS ($part: $(grep -c 'refused a connection' "$dir/cluster.log") CAF and $(grep -c 'refused a data connection' "$dir/cluster.log") data link refusal(s) logged)"
