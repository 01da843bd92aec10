#!/usr/bin/env bash
# Creates a cluster's TLS files with the openssl command line: a CA, and for each task a key and
# a certificate signed by that CA whose subject CN names the task (chief:0, ps:1, worker:0, ...),
# for --tls-cert, --tls-key and --tls-ca; admin:0 is an operator's (actorps scale).
#
# Usage: scripts/make_certs.sh [--host H]... [--days N] DIR TASK...
#   scripts/make_certs.sh /tmp/certs chief:0 ps:0 ps:1 worker:0 worker:1 evaluator:0
# writes DIR/ca.pem (the CA's certificate: every task's --tls-ca), DIR/ca.key (keep it off the
# cluster's hosts), and DIR/<type>-<index>.pem and .key per task (ps:1 -> ps-1.pem, ps-1.key).
# Each certificate's subjectAltName covers localhost, 127.0.0.1, ::1 and every --host given
# (a name or an address). An existing DIR/ca.pem and ca.key are reused, so certificates for
# tasks added later come from the same CA. Keys are EC P-256, unencrypted, mode 600.
set -euo pipefail

days=825
hosts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --host) hosts+=("${2:?--host needs a name or address}"); shift 2 ;;
    --days) days="${2:?--days needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "make_certs.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: make_certs.sh [--host H]... [--days N] DIR TASK... (see --help)" >&2
  exit 2
fi
dir=$1; shift
command -v openssl >/dev/null || { echo "make_certs.sh: the openssl command is missing (scripts/setup.sh installs it)" >&2; exit 2; }
for task in "$@"; do
  [[ "$task" =~ ^(chief|ps|worker|evaluator|admin):[0-9]+$ ]] \
    || { echo "make_certs.sh: '$task' is not a task (TYPE:INDEX, TYPE chief, ps, worker, evaluator or admin)" >&2; exit 2; }
done

mkdir -p "$dir"
umask 077
if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$days" -subj "/O=actorps/CN=actorps cluster CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
fi

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for h in "${hosts[@]}"; do
  if [[ "$h" =~ ^[0-9.]+$ || "$h" == *:* ]]; then san+=",IP:$h"; else san+=",DNS:$h"; fi
done

for task in "$@"; do
  base="$dir/${task/:/-}"
  ext=$(mktemp)
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" > "$ext"
  # Every task is both a server (it publishes) and a client (it dials the chief and the shards).
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$base.key" -out "$base.csr" -subj "/O=actorps/CN=$task" 2>/dev/null
  openssl x509 -req -in "$base.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days "$days" -extfile "$ext" -out "$base.pem" 2>/dev/null
  rm -f "$base.csr" "$ext"
  chmod 644 "$base.pem"
done
chmod 644 "$dir/ca.pem"
echo "make_certs.sh: CA $dir/ca.pem; certificates for $* in $dir (subjectAltName $san)"
