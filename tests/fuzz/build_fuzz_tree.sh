#!/usr/bin/env bash
# Configures and builds the fuzz tree (ACTORPS_FUZZ=ON: clang, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer) from the same sources as the main tree: CTest's fuzz_build test
# and scripts/fuzz.sh run it. The targets land in BUILD_DIR/fuzz_<target>.
# Usage: tests/fuzz/build_fuzz_tree.sh SOURCE_DIR BUILD_DIR
#   ACTORPS_FUZZ_LAUNCHER   a compiler launcher (the main tree passes its own, e.g. ccache)
#   ACTORPS_FUZZ_JOBS       parallel compile jobs (default: nproc)
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi
src=$1 out=$2

fail() {
  echo "fuzz_build: FAILED: $*" >&2
  exit 1
}
command -v clang++ >/dev/null && command -v clang >/dev/null \
  || fail "clang/clang++ not found: install Debian's clang (scripts/setup.sh installs it)"
# libFuzzer's runtime is a package of its own (libclang_rt.fuzzer-x86_64.a).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/probe.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/log" \
  || fail "clang++ cannot link a libFuzzer target ($(head -c 300 "$probe/log")): install" \
          "Debian's libclang-rt-14-dev (scripts/setup.sh installs it)"

launcher=()
if [ -n "${ACTORPS_FUZZ_LAUNCHER:-}" ]; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ACTORPS_FUZZ_LAUNCHER"
            -DCMAKE_CXX_COMPILER_LAUNCHER="$ACTORPS_FUZZ_LAUNCHER")
fi
start=$(date +%s)
mkdir -p "$out"
cmake -S "$src" -B "$out" -DACTORPS_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACTORPS_WERROR=OFF "${launcher[@]}" >"$out/configure.log" 2>&1 \
  || { cat "$out/configure.log" >&2; fail "cmake could not configure the fuzz tree in $out"; }
cmake --build "$out" --target fuzz_targets -j "${ACTORPS_FUZZ_JOBS:-$(nproc)}"
echo "fuzz_build: built the fuzz targets in $out in $(( $(date +%s) - start )) s"
