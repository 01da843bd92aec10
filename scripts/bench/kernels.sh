#!/usr/bin/env bash
# Backend kernels and one worker step, CPU and CUDA side by side (CUDA entries null with a
# reason when no GPU is usable). Writes one JSON object and prints a short table.
# Usage: scripts/bench/kernels.sh [-b BUILD_DIR] [-o FILE] [-m MIN_MS] [-k cpu|cuda|both]
# (defaults: build, build/bench/kernels.json, 200 ms per figure, both; ~30 s on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build out="" min_ms=200 backends=both
while getopts "b:o:m:k:" opt; do
  case $opt in
    b) build=$OPTARG ;; o) out=$OPTARG ;; m) min_ms=$OPTARG ;; k) backends=$OPTARG ;;
    *) sed -n 4p "$0"; exit 2 ;;
  esac
done
out=${out:-$build/bench/kernels.json}
bin=$build/actorps_bench_kernels
[ -x "$bin" ] || { echo "$bin is missing: build the project first (scripts/setup.sh)" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
status=0
OPENBLAS_NUM_THREADS=1 "$bin" --backends "$backends" --min-ms "$min_ms" > "$tmp" || status=$?
[ -s "$tmp" ] || { echo "actorps_bench_kernels wrote nothing (exit $status)" >&2; exit 1; }
mv "$tmp" "$out"
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def fig(e, key):
    return "-" if e is None else f"{e[key]:9.1f}"
print(f"cuda: {r['cuda']}" + (f" ({r['cuda_skipped']})" if "cuda_skipped" in r else ""))
print(f"{'model':16s} {'kernel':30s} {'shape':26s} {'unit':7s} {'cpu':>9s} {'cuda':>9s}")
for k in r["kernels"]:
    unit = "gflops" if "flops" in k else "gb_s"
    print(f"{k['model']:16s} {k['kernel']:30s} {k['shape']:26s} {unit:7s} {fig(k['cpu'], unit):>9s} {fig(k['cuda'], unit):>9s}")
for s in r["steps"]:
    print(f"{s['model']:16s} {'worker step (batch ' + str(int(s['batch'])) + ')':30s} {'':26s} {'ms':7s} {fig(s['cpu'], 'ms'):>9s} {fig(s['cuda'], 'ms'):>9s}")
    print(f"{'':16s} {'':30s} {'':26s} {'gflops':7s} {fig(s['cpu'], 'gflops'):>9s} {fig(s['cuda'], 'gflops'):>9s}")
ref = r["sgemm_reference"]
cpu_g = "-" if ref["cpu_gflops"] is None else f"{ref['cpu_gflops']:.1f}"
cuda_g = "-" if ref["cuda_gflops"] is None else f"{ref['cuda_gflops']:.1f}"
ratio = ref["cuda_step_over_half_sgemm"]
print(f"sgemm {ref['shape']}: cpu {cpu_g} GFLOP/s, cuda {cuda_g} GFLOP/s; "
      f"cuda step rate / (sgemm rate / 2) = {'-' if ratio is None else f'{ratio:.2f}'}")
print(f"valid: {r['valid']}  -> {sys.argv[1]}")
PY
exit $status
