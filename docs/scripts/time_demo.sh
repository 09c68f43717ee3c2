#!/usr/bin/env bash
# Time `uncertank demo` as a new user meets it and add the run to docs/results/demo.json:
#
#     bash docs/scripts/time_demo.sh LABEL [ENV=VALUE ...]
#
# LABEL names the run in the record (e.g. "avx512"); ENV=VALUE pairs are set for the run only, e.g.
# ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 to hold torch, oneDNN and MKL
# to AVX2 kernels on a machine with AVX-512. The demo runs in a new folder with an empty dataset cache
# (UNCERTANK_CACHE points at a new folder, so the datasets are built too), from the checkout's root; the
# load average before and after, the console's estimate and each step's seconds and estimate go to the record.
# KEEP_RESULTS=DIR keeps the run's results.json, run.log and console output in DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
label=${1:?usage: bash docs/scripts/time_demo.sh LABEL [ENV=VALUE ...]}
shift
work=$(mktemp -d)
load_before=$(cut -d' ' -f1 /proc/loadavg)
t0=$(date +%s.%N)
env UNCERTANK_CACHE="$work/cache" "$@" uncertank demo --out "$work/demo" > "$work/console.txt" 2>&1
t1=$(date +%s.%N)
load_after=$(cut -d' ' -f1 /proc/loadavg)
python docs/scripts/demo_record.py "$work/demo" --console "$work/console.txt" --label "$label" \
  --wall "$(python -c "print($t1 - $t0)")" --load "$load_before" "$load_after" --env "$*" \
  --out docs/results/demo.json
tail -n 3 "$work/console.txt"
if [ -n "${KEEP_RESULTS:-}" ]; then  # a folder to keep the run's results.json, run.log and console in
  mkdir -p "$KEEP_RESULTS" && cp "$work/demo/results.json" "$work/demo/run.log" "$work/console.txt" "$KEEP_RESULTS/"
fi
rm -rf "$work"
