"""Add one timed run of ``uncertank demo`` to docs/results/demo.json (docs/experiments.md, "What the default costs").

Called by docs/scripts/time_demo.sh with the run's folder, its console output and its wall time. The record
keeps, per run (by label): the machine (CPU model, cores, AVX-512 flags, torch's kernels), the load average
before and after, the wall time, the console's estimate with its range, each step's seconds beside its
estimate, and the in-domain numbers of each ranker, which docs/experiments.md's table must equal (a test
checks it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

IN_DOMAIN = ("R@1", "MAP", "ECE", "ECE balanced")


def _cpu() -> dict[str, object]:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")),
                     platform.processor())
    except (OSError, subprocess.CalledProcessError):
        model = platform.processor()
    flags = Path("/proc/cpuinfo").read_text().count("avx512") if Path("/proc/cpuinfo").exists() else None
    return {"model": model, "cores": os.cpu_count(), "grep -c avx512 /proc/cpuinfo (matches)": flags}


def _estimate(console: str) -> dict[str, object]:
    """The console's first line: ``estimated time: about X, up to Y under the load ... (Z at the rates ...``."""
    line = next((ln for ln in console.splitlines() if "estimated time:" in ln), "")
    return {"line": line.split("estimated time:", 1)[-1].strip()}


def _seconds(text: str) -> float:
    """``12 min 44 s`` or ``58 s`` as seconds."""
    m = re.fullmatch(r"(?:(\d+) h )?(?:(\d+) min)?\s*(?:(\d+) s)?", text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    h, mins, s = (int(x) if x else 0 for x in m.groups())
    return 3600 * h + 60 * mins + s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run", type=Path)
    ap.add_argument("--console", type=Path, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--wall", type=float, required=True)
    ap.add_argument("--load", type=float, nargs=2, required=True)
    ap.add_argument("--env", default="")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    result = json.loads((args.run / "results.json").read_text())
    console = args.console.read_text()
    estimate = _estimate(console)
    m = re.match(r"about (.+?), up to (.+?) under", str(estimate["line"]))
    if m:
        estimate["seconds"], estimate["high_seconds"] = _seconds(m.group(1)), _seconds(m.group(2))
    in_domain = {}
    for ev in result["evaluations"]:
        if ev["condition"] == "in-domain":
            row = {k: ev["metrics"].get(k) for k in IN_DOMAIN}
            row["mean_std"] = ev.get("mean_std")
            in_domain[ev["ranker"]] = row
    run = {
        "label": args.label,
        "command": "uncertank demo" + (f" (with {args.env})" if args.env else ""),
        "machine": {**_cpu(), "torch cpu capability": result["environment"].get("torch cpu capability"),
                    "torch threads": result["environment"].get("torch threads")},
        "load_average_before_after": args.load,
        "wall_seconds": round(args.wall, 1),
        "estimate": estimate,
        "steps": {name: {"seconds": round(s["seconds"], 2),
                         "estimated_seconds": None if s.get("estimated_seconds") is None
                         else round(s["estimated_seconds"], 2)}
                  for name, s in result["steps"].items()},
        "in_domain": in_domain,
    }
    record: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {
        "what": "Timed runs of `uncertank demo` (docs/scripts/time_demo.sh): a new folder, an empty dataset "
                "cache; the wall time is the whole command's, and the load average before and after says how "
                "busy the machine was.",
        "runs": []}
    record["runs"] = [r for r in record["runs"] if r["label"] != args.label] + [run]
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
