#!/usr/bin/env bash
# Usage: scripts/bench/torch_ps.sh [torch_ps.py flags: -o FILE --steps N --repeats R ...]
#
# The PyTorch MLP through actorps (2 worker processes, 1 shard process) vs PyTorch's own RPC
# parameter server vs one PyTorch process, samples/s and actorps's bytes copied per step:
# scripts/bench/torch_ps.py against the Python package of the build tree (build/python), with
# the first python3 that imports torch. JSON by default in build/bench/torch_ps.json.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/scripts/python_with.sh"
python=$(python_with torch) || { echo "torch_ps.sh: no python3 with torch: run scripts/setup.sh" >&2; exit 2; }
if [[ ! -d "$root/build/python/actorps" ]]; then
  echo "torch_ps.sh: $root/build/python/actorps is missing; build first:" >&2
  echo "  cmake -S $root -B $root/build -DCMAKE_BUILD_TYPE=Release && cmake --build $root/build -j2" >&2
  exit 1
fi
PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}" exec "$python" "$root/scripts/bench/torch_ps.py" "$@"
