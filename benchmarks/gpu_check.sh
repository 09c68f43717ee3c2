#!/usr/bin/env bash
# The prepared GPU check: the neural tests with a GPU present, the GPU path on trained models, the
# scoring cost ratios and the Polya-Gamma sampler, each under its own time limit (about 8 minutes in
# all on one H100). On a GPU machine that reaches no package index, from the checkout's root, with
# the bundle of ../shared/gpu/prepare.sh beside it:
#
#     bash .gpu-bundle/run.sh bash benchmarks/gpu_check.sh OUT
#
# Elsewhere, with the project installed: bash benchmarks/gpu_check.sh OUT. Every log, the JSON
# record of benchmarks/gpu_path.py and the RESULTS.md its sections were written into land in OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash benchmarks/gpu_check.sh OUT}
mkdir -p "$OUT"
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this check needs a GPU')" || exit 2

step() {  # step NAME SECONDS CMD...: run CMD with a time limit, keep its log, print its tail
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc in $((SECONDS - t0)) s" | tee -a "$OUT/summary.txt"
  tail -n 25 "$OUT/$name.log"
}

step pytest 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/nn plugins tests/test_device_placement.py
step gpu_path 240 python3 benchmarks/gpu_path.py --device cuda --cpu-fit --repeats 3 --json "$OUT/gpu_path.json"
step inference 60 python3 benchmarks/bench_inference.py --device cuda
step polya_gamma 40 python3 benchmarks/bench_polya_gamma.py --quick
cp benchmarks/RESULTS.md "$OUT/RESULTS.md"
cat "$OUT/summary.txt"
