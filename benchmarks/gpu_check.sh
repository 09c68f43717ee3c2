#!/usr/bin/env bash
# The prepared GPU check: the neural tests with a GPU present, the GPU path on trained models, the
# scoring cost ratios, the Polya-Gamma sampler and PG-DRR's Gibbs sweep, each under its own time limit
# (under 10 minutes in all on one H100; GPU_CHECK_SAMPLER=0 and GPU_CHECK_PATH=0 leave steps out). On a GPU machine
# that reaches no package index, from the checkout's root, with the bundle of ../shared/gpu/prepare.sh
# beside it and, for the laplace-torch and rerankers comparisons, their wheels added to it:
#
#     bash ../shared/gpu/prepare.sh
#     pip download -q --no-deps -d .gpu-bundle/whl rerankers==0.10.0 laplace-torch==0.3 asdfghjkl==0.1a4 \
#         backpack-for-pytorch==1.7.1 curvlinops-for-pytorch==3.0.1 einconv==0.1.0 unfoldNd==0.2.3 \
#         peft==0.21.2 gguf==0.19.0
#
# (peft and gguf for plugins/uncertank-llm, whose tests build tiny language models; the packaged SmolLM2's
# 98 MB GGUF is over what may travel with the checkout, so the GPU check fine-tunes and scores the tiny ones.)
#     bash .gpu-bundle/run.sh bash benchmarks/gpu_check.sh OUT
#
# The full study on the GPU (every model trained, about 10 minutes more) is its own script, with its own
# time limit: benchmarks/gpu_full_study.sh.
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

# The neural tests with the GPU present (device "auto" picks CUDA; the device-aware tests run on both;
# each worker may take its share of the GPU's memory, conftest.py). The one test that needs PyMC (a Bayes
# extra the GPU image lacks) is left out by name.
step pytest 170 python3 -m pytest -q -n 8 -p no:cacheprovider tests/nn plugins tests/test_device_placement.py \
  --deselect plugins/uncertank-pgdrr/tests/test_gibbs_logistic.py::test_gibbs_recovers_the_nuts_posterior
# Trained models: bert with the real run's recipe on all 9,539 training queries, scored on its 600 in-domain
# test queries (the CPU's numbers are the real run's); sngp, gpf_bert and pgdrr start from it and train on
# 2,000; the ensemble's M = 2 here (its M = 5 cost is bench_inference's); the CPU re-scores two checkpoints.
if [ "${GPU_CHECK_PATH:-1}" = 1 ]; then  # GPU_CHECK_PATH=0 leaves out the trained models, measured already
  step gpu_path 300 python3 benchmarks/gpu_path.py --device cuda --others-train-queries 2000 --members 2 \
    --cpu-check bert,pgdrr --repeats 3 --json "$OUT/gpu_path.json"
fi
# The networks on 1,024 pre-encoded pairs (64 leave an H100 waiting on kernel launches), whole predicts with the
# tokenisation's share, and torch.profiler's busiest operators of one whole predict per ranker (in the log).
step inference 150 python3 benchmarks/bench_inference.py --device cuda --pairs 1024 --repeats 5 --profile
if [ "${GPU_CHECK_SAMPLER:-1}" = 1 ]; then  # GPU_CHECK_SAMPLER=0 leaves out what was measured already
  step polya_gamma 45 bash -c "python3 benchmarks/bench_polya_gamma.py --repeats 3 && python3 benchmarks/bench_polya_gamma.py \
    --bank-sweep --device cuda --sizes 256,1024,4096 --repeats 2 --out '$OUT/pgdrr_bank_cost_cuda.json'"
fi
# The demo study's neural part on the GPU (device "auto"): its in-domain and cross-NS random conditions, the
# Bayes stage off (a GPU image without faiss, the chitchat package or PyMC runs the rest of it).
if [ "${GPU_CHECK_DEMO:-1}" = 1 ]; then
  uncertank_cli() { python3 -c "from uncertank.cli import main; main()" "$@"; }
  uncertank_cli demo --show | python3 -c "
import re, sys
t = sys.stdin.read()
for cond in ('cross-NS embedding', 'cross-domain chitchat'):
    t = re.sub(r'\[\[conditions\]\]\nname = \"%s\"\n[^\[]*' % cond, '', t)
t = t[: t.index('[bayes]')].replace('uncertank demo (default)', 'the demo study on a GPU')
print(t + '[bayes]\nenabled = false')" > "$OUT/demo_gpu.toml"
  step demo 240 uncertank_cli run "$OUT/demo_gpu.toml" --out "$OUT/demo"
  rm -rf "$OUT/demo/predictions" "$OUT/demo/models"
fi
cp benchmarks/RESULTS.md "$OUT/RESULTS.md"
cat "$OUT/summary.txt"
