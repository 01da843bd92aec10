#!/usr/bin/env bash
# What a GPU machine can tell about the CUDA backend, in one go, for a machine lent
# for minutes: the GPU and driver; the CUDA tests with ACTORPS_REQUIRE_CUDA=1 (a skip fails);
# the default Fashion-MNIST run on CUDA and on the CPU with the same seed (accuracy); sync mode
# on both, the exported parameters compared element by element; a run with 4 workers on the one
# GPU; samples/s of the default model, the large one (784-2048-2048-10) and DLRM on a generated
# Criteo set, on both backends; the kernel benchmark (scripts/bench/kernels.sh); last, if asked,
# every doctest case of the suite under CTest with ACTORPS_REQUIRE_CUDA=1. Each phase writes
# into OUT as it ends, so a run cut short still leaves what it measured. Summary:
# OUT/gpu_check.json.
# usage: scripts/bench/gpu_check.sh [-b BUILD_DIR] [-o OUT_DIR] [-s SUITE_SECONDS] [-j JOBS]
#        (-s 0, the default, skips the whole-suite phase)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=build out=build/bench/gpu suite_s=0 jobs=8
while getopts "b:o:s:j:" opt; do
  case $opt in b) build=$OPTARG ;; o) out=$OPTARG ;; s) suite_s=$OPTARG ;; j) jobs=$OPTARG ;;
    *) grep "^# usage" "$0" >&2; exit 2 ;; esac
done
bin=$build/actorps tests=$build/tests/actorps_tests
for f in "$bin" "$tests" "$build/actorps_bench_kernels"; do
  [ -x "$f" ] || { echo "gpu_check.sh: $f is missing: build first" >&2; exit 2; }
done
mkdir -p "$out"
export ACTORPS_REQUIRE_CUDA=1
python=$(command -v python3)

phase() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

phase "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
  | tee "$out/gpu.txt"
"$bin" version | tee -a "$out/gpu.txt"

phase "CUDA tests (a skip is a failure here)"
"$tests" --test-case="*cuda*,backend*,host_buffer*,stopwatch*,make_backend*" \
  > "$out/cuda_tests.log" 2>&1
echo "exit $?" >> "$out/cuda_tests.log"
tail -4 "$out/cuda_tests.log"

# One training run: its summary event (JSONL) lands in OUT/NAME.jsonl, its log in OUT/NAME.log.
train() {
  local name=$1; shift
  "$bin" simulate --seed 1 --metrics "$out/$name.jsonl" "$@" > "$out/$name.log" 2>&1
  echo "$name: exit $? $(grep -m1 -o 'samples in .*' "$out/$name.log") $(grep -m1 -o 'final test accuracy [0-9.]*' "$out/$name.log")"
}
phase "training runs"
train default_cpu --backend cpu
train default_cuda --backend cuda
rm -rf "$out/export_cpu" "$out/export_cuda"
train sync_cpu --backend cpu --mode sync --epochs 1 --export-dir "$out/export_cpu"
train sync_cuda --backend cuda --mode sync --epochs 1 --export-dir "$out/export_cuda"
train workers4_cuda --backend cuda --workers 4
train large_cpu --backend cpu --model 784-2048-2048-10 --batch 512 --epochs 1
train large_cuda --backend cuda --model 784-2048-2048-10 --batch 512 --epochs 1
# DLRM on a generated Criteo set: the embedding gather and scatter on the GPU, sync mode.
"$bin" gen-data criteo --out "$out/criteo" --rows 100000 --test-rows 10000 --seed 3 > /dev/null
ctr=(--model dlrm --dataset "criteo:$out/criteo/train.tsv" --test "$out/criteo/test.tsv"
     --epochs 1 --batch 256 --optimizer adam --lr 0.002 --mode sync)
train dlrm_cpu --backend cpu "${ctr[@]}"
train dlrm_cuda --backend cuda "${ctr[@]}"

phase "kernels"
scripts/bench/kernels.sh -b "$build" -o "$out/kernels.json" 2>&1 | tail -25

if [ "$suite_s" -gt 0 ]; then
  phase "every doctest case under CTest, $jobs at a time, at most $suite_s s"
  # Only the doctest cases: the suite's other tests need the fuzz tree, Python packages and
  # network namespaces that a lent machine may lack.
  suite=$(mktemp -d)
  printf 'include("%s")\n' "$(realpath "$build"/tests/actorps_tests_tests-*.cmake)" > "$suite/CTestTestfile.cmake"
  timeout "$suite_s" ctest --test-dir "$suite" -j "$jobs" --output-on-failure > "$out/suite.log" 2>&1
  echo "exit $?" >> "$out/suite.log"
  grep -E "tests passed|tests failed|Total Test time|\*\*\*Failed|\*\*\*Skipped|Not Run|Timeout" "$out/suite.log" | head -40
fi

phase "summary"
"$python" - "$out" <<'PY'
import json, os, re, sys
out = sys.argv[1]
def summary(name):
    try:
        for line in open(os.path.join(out, name + ".jsonl")):
            e = json.loads(line)
            if e.get("event") == "summary":
                return {k: e.get(k) for k in ("backend", "mode", "workers", "final_test_accuracy",
                                              "final_test_auc", "final_test_loss",
                                              "samples_per_s", "wall_s")}
    except OSError as err:
        return {"missing": str(err)}
    return {"missing": "no summary event"}
def compare_exports():
    try:
        import numpy as np, onnx
        from onnx import numpy_helper
    except ImportError as err:
        return {"skipped": f"no onnx/numpy here: {err}"}
    def weights(d):
        m = onnx.load(os.path.join(out, d, "1", "model.onnx"))
        return {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    a, b = weights("export_cpu"), weights("export_cuda")
    worst, norm_diff, norm = 0.0, 0.0, 0.0
    for k in a:
        d = np.abs(a[k] - b[k])
        worst = max(worst, float(d.max()))
        norm_diff += float((d ** 2).sum()); norm += float((a[k] ** 2).sum())
    return {"tensors": len(a), "max_abs_diff": worst, "relative_l2_diff": (norm_diff / norm) ** 0.5}
tests = open(os.path.join(out, "cuda_tests.log")).read()
m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped", tests)
result = {
    "gpu": open(os.path.join(out, "gpu.txt")).read().strip().splitlines(),
    "cuda_tests": dict(zip(("cases", "passed", "failed", "skipped"), map(int, m.groups()))) if m else None,
    "runs": {n: summary(n) for n in ("default_cpu", "default_cuda", "sync_cpu", "sync_cuda",
                                     "workers4_cuda", "large_cpu", "large_cuda", "dlrm_cpu",
                                     "dlrm_cuda")},
    "sync_cpu_vs_cuda_parameters": compare_exports(),
}
try:
    k = json.load(open(os.path.join(out, "kernels.json")))
    result["sgemm_reference"] = k["sgemm_reference"]
    result["steps"] = k["steps"]
except (OSError, KeyError, ValueError) as err:
    result["kernels"] = f"missing: {err}"
try:
    s = open(os.path.join(out, "suite.log")).read()
    m = re.search(r"(\d+)% tests passed(?:, (\d+) tests failed)? out of (\d+)", s)
    result["suite"] = {"passed_percent": int(m.group(1)), "failed": int(m.group(2) or 0),
                       "total": int(m.group(3)),
                       "failed_names": re.findall(r"\d+ - (.*) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted)\)", s)} if m else s[-2000:]
except OSError:
    pass
json.dump(result, open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
print(json.dumps(result, indent=1))
PY
