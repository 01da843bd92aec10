#!/usr/bin/env bash
# Rebuilds the seed corpus under tests/fuzz/corpus/<target>/ from what actorps itself writes:
# the wire messages, data-link conversations and shared-memory records of the real encoders
# (fuzz_seed_writer), checkpoints and exported models of short `actorps simulate` runs, data
# from `actorps gen-data` and Fashion-MNIST, TF_CONFIG as launch_local.sh and the TFJob
# operator write it.
# Each seed starts with the selector byte its target reads first (see each *_fuzz.cpp).
# Usage: tests/fuzz/make_corpus.sh ACTORPS FUZZ_SEED_WRITER   (e.g. build/actorps
#        build/fuzz/fuzz_seed_writer); replaces the corpus directories.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 ACTORPS FUZZ_SEED_WRITER" >&2
  exit 2
fi
actorps=$(realpath "$1") seed_writer=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
targets=(wire link_frame shm_record arriving_push checkpoint cluster_spec model_file prediction_input text_lines)
for t in "${targets[@]}"; do rm -rf "${out:?}/$t"; mkdir -p "$out/$t"; done

# seed TARGET NAME SELECTOR_BYTE FILE...: the selector byte, then the files (joined by the
# checkpoint target's separator when there are several).
separator=$'\n=====actorps-fuzz-file=====\n'
seed() {
  local target=$1 name=$2 selector=$3
  shift 3
  {
    printf "\\x$(printf %02x "$selector")"
    local first=1
    for f in "$@"; do
      [ $first = 1 ] || printf '%s' "$separator"
      first=0
      cat "$f"
    done
  } >"$out/$target/$name"
}

# Wire messages, data-link conversations, shared-memory records.
"$seed_writer" "$out"

# Short runs: an MLP on synthetic data, sparse logistic regression on libsvm, lr and dlrm on
# Criteo lines; with a checkpoint at clock 4 and an export.
cd "$work"
"$actorps" gen-data libsvm --out lsv --rows 64 --test-rows 16 --features 50 --nnz 4 >/dev/null
"$actorps" gen-data criteo --out cri --rows 64 --test-rows 16 >/dev/null
run() { "$actorps" simulate --steps 4 --batch 8 --no-progress --log-level error "$@" >/dev/null; }
run --dataset synthetic --model 8-6-10 --synthetic-rows 64 --synthetic-test-rows 16 \
  --block-floats 16 --checkpoint-dir ck_mlp --checkpoint-every 4 --export-dir ex_mlp
run --dataset libsvm:lsv/train.libsvm --test lsv/test.libsvm --model sparse-lr:ftrl \
  --checkpoint-dir ck_sparse --checkpoint-every 4
run --dataset criteo:cri/train.tsv --test cri/test.tsv --model lr --export-dir ex_lr
run --dataset criteo:cri/train.tsv --test cri/test.tsv --model dlrm:2:4:4 --export-dir ex_dlrm

for kind in mlp sparse; do
  d=$(ls -d ck_$kind/ckpt-*)
  for selector in 0 1; do
    seed checkpoint "${kind}_$selector" $selector "$d/MANIFEST.json" "$d/run-id" "$d/run.capnp" \
      "$d/shard-0.capnp" "$d/shard-1.capnp"
  done
  # the files alone, as the wire target reads them
  seed wire "file_${kind}_run" 6 "$d/run.capnp"
  seed wire "file_${kind}_shard" 5 "$d/shard-1.capnp"
done
for kind in mlp lr dlrm; do cp ex_$kind/1/model.capnp "$out/model_file/$kind"; done

# Prediction inputs: two Fashion-MNIST test images as IDX (plain and gzip), raw float32 rows,
# and CSV as a user writes it.
mnist=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
python3 - "$mnist" >idx <<'PY'
import gzip, struct, sys
pixels = gzip.open(sys.argv[1]).read(16 + 2 * 784)[16:]
sys.stdout.buffer.write(struct.pack(">IIII", 0x803, 2, 28, 28) + pixels)
PY
gzip -9n <idx >idx.gz
seed prediction_input idx_auto 0 idx
seed prediction_input idx_gz 1 idx.gz
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<8f", 0, 0.5, 1, 0.25, 0.125, 1, 0, 0.75))' >raw
seed prediction_input raw 2 raw
printf 'label,f1,f2,f3\n3,0.5,1e-3,-2\n1,"0.25", 7 ,4.0\r\n\n0,1,2,3\n' >csv_header
printf '\xef\xbb\xbf0.5;1;2\n1.5;0;1.0\n' >csv_last
printf 'y\ta\tb\n2.000000000000000000e+00\t1\t2\n' >csv_tabs
seed prediction_input csv 3 csv_header
seed prediction_input csv_label_last 4 csv_last
seed prediction_input csv_tabs 5 csv_tabs

# libsvm and Criteo lines (selector: bit 0 Criteo, bit 1 skip bad lines, bits 4-6 batch size).
{ head -n 12 lsv/train.libsvm; printf '+1 qid:3 7:0.5 9:-1.25e-2 # a comment\r\n\n# only a comment\n-1\n'; } >libsvm
head -n 6 cri/train.tsv >criteo
gzip -9n <libsvm >libsvm.gz
gzip -9n <criteo >criteo.gz
seed text_lines libsvm $((0x30)) libsvm
seed text_lines libsvm_gz $((0x12)) libsvm.gz
seed text_lines criteo $((0x21)) criteo
seed text_lines criteo_gz $((0x03)) criteo.gz

# TF_CONFIG: launch_local.sh's cluster file, the TFJob operator's, a user's own loop, --task.
printf '%s' '{"cluster": {"chief": ["127.0.0.1:40001"], "ps": ["127.0.0.1:40002", "127.0.0.1:40003"], "worker": ["127.0.0.1:40004", "127.0.0.1:40005"], "evaluator": ["127.0.0.1:40006"]}}' >launch
printf '%s' '{"cluster": {"Master": ["job-master-0:2222"], "PS": ["job-ps-0:2222"], "Worker": ["job-worker-0:2222", "job-worker-1:2222"]}, "task": {"type": "Worker", "index": 1}, "environment": "cloud"}' >tfjob
printf '%s' '{"cluster": {"ps": ["[::1]:2222"], "worker": ["localhost:2223"]}, "task": {"type": "ps", "index": 0}}' >user
printf '%s' '{"task": {"type": "evaluator", "index": 0}}' >task
seed cluster_spec launch_local 0 launch
seed cluster_spec tfjob 0 tfjob
seed cluster_spec user_loop 1 user
seed cluster_spec tf_config_task 2 task
printf 'Worker:1' >flag
seed cluster_spec task_flag 3 flag

du -sh "$out"/* | sed "s|$out/||"
