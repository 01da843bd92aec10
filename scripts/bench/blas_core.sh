#!/usr/bin/env bash
# The OpenBLAS kernels actorps runs (kernels/blas_core.hpp) against the ones OpenBLAS would
# choose by itself, on the default Fashion-MNIST run (actorps simulate --ps 2 --workers 2): the
# two alternate, ROUNDS rounds (default 3), so that the machine's load spreads over both. The
# "chosen" runs start with OPENBLAS_CORETYPE unset (actorps decides; `actorps version` names the
# kernels), the "fallback" runs with OPENBLAS_CORETYPE=FALLBACK (default Prescott, what Debian
# 12's OpenBLAS gives a CPU it does not know). On a CPU OpenBLAS knows both name its own choice
# unless FALLBACK says otherwise. Writes samples/s and final test accuracy per run and the
# median ratio per round, JSON.
# usage: scripts/bench/blas_core.sh [-o FILE] [-r ROUNDS] [-f FALLBACK] [-b BUILD_DIR] [-- flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/blas_core.json rounds=3 fallback=Prescott build=build
while getopts "o:r:f:b:" opt; do
  case $opt in
    o) out=$OPTARG ;; r) rounds=$OPTARG ;; f) fallback=$OPTARG ;; b) build=$OPTARG ;;
    *) sed -n 10p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "blas_core.sh: -r must be a positive number" >&2; exit 2; }
binary=$(realpath "$build/actorps")
[ -x "$binary" ] || { echo "$binary is missing: run scripts/setup.sh first" >&2; exit 2; }
python=$(command -v /usr/bin/python3 || command -v python3)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

chosen=$(env -u OPENBLAS_CORETYPE "$binary" version | sed -n 's/^OpenBLAS kernels: //p')
for ((round = 1; round <= rounds; round++)); do
  for kind in fallback chosen; do
    log="$tmp/$kind-$round"
    uptime > "$log.load"
    if [ "$kind" = fallback ]; then
      OPENBLAS_CORETYPE=$fallback "$binary" simulate --ps 2 --workers 2 "$@" > "$log" 2>&1
    else
      env -u OPENBLAS_CORETYPE "$binary" simulate --ps 2 --workers 2 "$@" > "$log" 2>&1
    fi
    echo "round $round $kind: $(grep -Eo '= [0-9]+ samples/s' "$log" | tail -1)" >&2
  done
done

"$python" - "$tmp" "$out" "$rounds" "$fallback" "$chosen" "$*" <<'PY'
import json, os, re, statistics, sys
tmp, out, rounds, fallback, chosen, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:7]
runs = []
for r in range(1, rounds + 1):
    for kind in ("fallback", "chosen"):
        log = open(os.path.join(tmp, f"{kind}-{r}")).read()
        rate = re.findall(r"= (\d+) samples/s", log)
        acc = re.findall(r"final test accuracy ([0-9.]+)", log)
        if not rate or not acc:
            sys.exit(f"round {r} {kind}: no summary in its output:\n{log[-2000:]}")
        load = re.search(r"load average: ([0-9.]+)", open(os.path.join(tmp, f"{kind}-{r}.load")).read())
        runs.append({"round": r, "kind": kind, "kernels": fallback if kind == "fallback" else chosen,
                     "samples_per_s": float(rate[-1]), "final_test_accuracy": float(acc[-1]),
                     "load_average_1min_before": float(load.group(1))})
rate = {(x["round"], x["kind"]): x["samples_per_s"] for x in runs}
ratios = [rate[(r, "chosen")] / rate[(r, "fallback")] for r in range(1, rounds + 1)]
med = lambda kind, key: statistics.median(x[key] for x in runs if x["kind"] == kind)
result = {"bench": "blas_core", "chief_flags": flags, "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
          "chosen_kernels": chosen, "fallback_kernels": fallback,
          "samples_per_s": {k: med(k, "samples_per_s") for k in ("fallback", "chosen")},
          "final_test_accuracy": {k: med(k, "final_test_accuracy") for k in ("fallback", "chosen")},
          "ratio_chosen_to_fallback_per_round": ratios,
          "ratio_chosen_to_fallback": statistics.median(ratios), "runs": runs}
json.dump(result, open(out, "w"), indent=1)
print(f"{chosen} kernels {result['samples_per_s']['chosen']:.0f} samples/s against {fallback}'s "
      f"{result['samples_per_s']['fallback']:.0f}: {result['ratio_chosen_to_fallback']:.2f}x "
      f"(rounds {', '.join(f'{x:.2f}' for x in ratios)}); accuracy "
      f"{result['final_test_accuracy']['chosen']:.4f} / {result['final_test_accuracy']['fallback']:.4f}  -> {out}")
PY
