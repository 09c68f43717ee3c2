"""docs/scripts/mc_dropout_frontier.py runs its whole pipeline on a tiny model (--smoke)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "mc_dropout_frontier.py"
KS = ("0", "1", "2", "3", "all")
TS = (5, 10, 20)
NUMBERS = ("cost_ratio", "s_per_1000_pairs_best", "ECE", "ECE_balanced", "ECE_balanced_seed0",
           "ECE_balanced_seed_sd", "R10@1", "risk_b", "R10@1_risk_aware",
           "risk_aware_gain", "NOTA_F1_means", "NOTA_F1_with_variance", "ece_balanced_reduction")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_smoke_run_measures_every_setting(tmp_path):
    pytest.importorskip("sklearn")
    out, fig = tmp_path / "frontier.json", tmp_path / "frontier.png"
    # 100 resamples, not 1,000: the interval's code is the same, and the bootstrap was two thirds of the run
    proc = _run("--smoke", "--repeats", "3", "--nota-trees", "10", "--bootstrap", "100",
                "--workdir", str(tmp_path / "work"), "--out", str(out), "--figure", str(fig))
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    rows = {(r["k"], r["T"]): r for r in payload["frontier"]}
    assert set(rows) == {(k, t) for k in KS for t in TS}
    for row in rows.values():
        for key in NUMBERS:
            assert math.isfinite(row[key]), (row["k"], row["T"], key)
        assert 0 <= row["ECE"] <= 1 and 0 <= row["R10@1"] <= 1 and row["cost_ratio"] > 0
        share = row["share_of_full_ece_reduction"]
        assert (share is None) == (not payload["target"]["share_defined"])
        assert share is None or math.isfinite(share)
        lo, hi = row["ece_balanced_reduction_ci95"]
        assert math.isfinite(lo) and lo <= hi
        assert (row["share_ci95"] is None) == (share is None)
    assert rows[("all", 10)]["share_of_full_ece_reduction"] in (None, 1.0)
    assert math.isfinite(payload["target"]["reference_reduction_second_draw"])  # 20 passes hold two draws of 10
    # The costs are measured (their sizes are the benchmark's business, not a test's: timings move with load).
    assert all(math.isfinite(r["cost_ratio"]) and r["cost_ratio"] > 0 for r in rows.values())
    bert = payload["bert"]
    assert bert["k"] == "none" and bert["T"] == 1 and bert["cost_ratio"] == 1.0
    assert all(math.isfinite(bert[key]) for key in ("ECE", "ECE_balanced", "R10@1", "NOTA_F1_means"))
    assert payload["settings"]["n_layers"] == 4 and payload["settings"]["cost_pairs"] == 64
    assert payload["command"].startswith("python docs/scripts/mc_dropout_frontier.py --smoke")
    assert len(payload["load_average"]["before_timing"]) == 3 and payload["machine"]["torch"]
    # The scores are cached, bert's and one file per split and k, each keyed and with its record, to resume from.
    samples_folder = Path(payload["settings"]["samples_folder"])
    assert samples_folder.parent == Path(payload["settings"]["work_folder"], "mc_dropout_frontier")
    assert samples_folder.name == payload["settings"]["model_sha256"][:12] and payload["settings"]["study"] is None
    cached = sorted(p.name for p in samples_folder.glob("*.npy"))
    assert len(cached) == 2 * len(KS) + 1 and sum(n.startswith("test_q20_kall_T20-") for n in cached) == 1
    assert sorted(p.name for p in samples_folder.glob("*.json")) == [n[:-4] + ".json" for n in cached]
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    assert matplotlib.image.imread(fig).ndim == 3
    assert "| `bert` | 1 | 1.00 |" in proc.stdout and "| all | 20 |" in proc.stdout


def test_a_missing_real_run_model_and_bad_ks_fail_clearly(tmp_path):
    proc = _run("--model", str(tmp_path / "bert"), "--workdir", str(tmp_path))
    assert proc.returncode != 0 and "the real run's model is not trained yet" in proc.stderr
    assert "uncertank run docs/studies/real_run.toml --out .cache/real_run/study" in proc.stderr
    proc = _run("--recost", str(tmp_path / "frontier.json"), "--model", str(tmp_path / "bert"))
    assert proc.returncode != 0 and "uncertank run docs/studies/real_run.toml" in proc.stderr
    proc = _run("--ks", "0,two", "--workdir", str(tmp_path))
    assert proc.returncode != 0 and "--ks must be a comma list of integers >= 0 and 'all'; got '0,two'" in proc.stderr
    proc = _run("--ks", "1,1", "--workdir", str(tmp_path))
    assert proc.returncode != 0 and "--ks must name distinct values" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_reduction_interval_is_a_paired_query_bootstrap():
    """The interval equals a loop that resamples whole queries and balances both systems with the same seed."""
    import numpy as np

    from uncertank import QuerySet
    from uncertank.metrics import expected_calibration_error

    rng = np.random.default_rng(3)
    lengths = rng.integers(3, 8, size=25)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    labels = np.zeros(offsets[-1], dtype=np.int64)
    labels[offsets[:-1]] = 1  # one relevant candidate per query
    test = QuerySet([["c"]] * 25, ["r"] * int(offsets[-1]), offsets, labels)
    a, b = rng.random(offsets[-1]), rng.random(offsets[-1])
    lo, hi = load_script(SCRIPT).balanced_ece_reduction_interval(test, a, b, n_resamples=200, n_seeds=3)

    draws, diffs = np.random.default_rng(0), []
    for r in range(200):
        qs = draws.integers(0, 25, size=25)
        pos = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in qs])
        d = 0.0
        for seed in range(3 * r, 3 * r + 3):  # the same three subsamples for both scorers
            d += sum(sign * expected_calibration_error(p[pos], labels[pos], n_bins=10, strategy="uniform",
                                                       balanced=True, seed=seed) for sign, p in ((1, a), (-1, b)))
        diffs.append(d / 3)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])), abs=1e-12)
    assert lo < 0 < hi  # two random scorers: no reduction either way
    assert load_script(SCRIPT).balanced_ece_reduction_interval(test, a, a, n_resamples=50) == (0.0, 0.0)


def _queries(labels: list[int]) -> object:
    from uncertank import QuerySet

    return QuerySet.from_lists(["q"], [[f"c{i}" for i in range(len(labels))]], [labels])


def test_a_cached_step_is_reused_only_with_its_recorded_bytes(tmp_path):
    """A finished step is read back, not computed; other inputs, other bytes or no record compute it again."""
    import numpy as np

    cached_scores = load_script(SCRIPT).cached_scores
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return np.arange(6.0).reshape(2, 3) + len(calls)

    inputs = {"step": "samples test", "params": {"n_passes": 2}}
    first = cached_scores(tmp_path, "test_q1_k0_T2", inputs, compute)
    (npy,) = tmp_path.glob("*.npy")
    record = json.loads(npy.with_suffix(".json").read_text())
    assert npy.name == f"test_q1_k0_T2-{record['key']}.npy" and record["inputs"] == inputs
    assert record["shape"] == [2, 3] and len(calls) == 1
    again = cached_scores(tmp_path, "test_q1_k0_T2", inputs, compute)  # resumed: not computed
    assert len(calls) == 1 and np.array_equal(again, first)

    other = cached_scores(tmp_path, "test_q1_k0_T2", {**inputs, "params": {"n_passes": 3}}, compute)
    assert len(calls) == 2 and not np.array_equal(other, first) and len(list(tmp_path.glob("*.npy"))) == 2

    np.save(npy, np.zeros((2, 3)))  # another valid file, not the bytes recorded
    assert np.array_equal(cached_scores(tmp_path, "test_q1_k0_T2", inputs, compute), first + 2)
    assert len(calls) == 3
    npy.with_suffix(".json").unlink()  # a run stopped between the file and its record
    assert np.array_equal(cached_scores(tmp_path, "test_q1_k0_T2", inputs, compute), first + 3)
    assert len(calls) == 4 and npy.with_suffix(".json").exists()


def test_a_steps_key_changes_with_every_input_and_the_code(tmp_path):
    from uncertank.experiment import RankerConfig
    from uncertank.experiment.stages import unfitted_key
    from uncertank.files import json_digest

    script = load_script(SCRIPT)
    qs = _queries([1, 0, 0])

    def key(module=script, step="samples test", queries=qs, model="m", device="cpu", n_passes=20, mc_layers=1):
        return json_digest(module.step_inputs(step, queries, model, device, n_passes=n_passes, mc_layers=mc_layers))

    base = key()
    assert base == key(queries=_queries([1, 0, 0]))  # the queries by content
    changed = [key(step="samples valid"), key(queries=_queries([0, 1, 0])), key(model="m2"), key(device="cuda"),
               key(n_passes=10), key(mc_layers=None), key(mc_layers=2)]
    assert len({base, *changed}) == 1 + len(changed)
    inputs = script.step_inputs("samples test", qs, "m", "cpu", n_passes=20, mc_layers=1)
    assert inputs["code"]["mc_dropout"] == unfitted_key(RankerConfig(name="mc_dropout",
                                                                     params={"n_passes": 20, "mc_layers": 1}))
    assert inputs["code"]["bert"] == unfitted_key(RankerConfig(name="bert"))
    assert "mc_dropout" not in script.step_inputs("bert", qs, "m", "cpu")["code"]

    # The script's own source: an edited copy keys the same step differently.
    copy = tmp_path / "docs" / "scripts"
    copy.mkdir(parents=True)
    for name in ("mc_dropout_frontier.py", "mc_dropout_frontier_tables.py"):
        (copy / name).write_text((SCRIPT.parent / name).read_text())
    assert key(load_script(copy / "mc_dropout_frontier.py")) == base
    with open(copy / "mc_dropout_frontier.py", "a") as fh:
        fh.write("# edited\n")
    assert key(load_script(copy / "mc_dropout_frontier.py")) != base
