"""results.json is the whole truth: a report drawn again from its folder alone is the same, byte for byte.

A tiny study (BM25, a word-overlap ranker and an ensemble of three of them,
40 test queries, no Bayesian fit) runs through ``uncertank run``; its
report is deleted and drawn again by ``uncertank report DIR``. Every starred
cell of a report is traced back to a p-value stored in results.json.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import shutil
import types
import warnings
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank import CallableRanker, EnsembleRanker, hookimpl
from uncertank.cli import cli
from uncertank.experiment import runner, systems
from uncertank.experiment.decisions import decide, with_decisions
from uncertank.experiment.preflight import validate_config
from uncertank.experiment.report import render_report, write_report
from uncertank.experiment.result import CalibrationDetail, StudyResult
from uncertank.plugins import get_plugin_manager

STUDY = """
[study]
name = "tiny"
train_dataset = "ubuntu-sample"
max_train_queries = 20
max_valid_queries = 30
max_test_queries = 40
risk_grid = [0.0, 0.5]
reference = "overlap"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "bm25"

[[conditions]]
name = "cross-NS random"
dataset = "ubuntu-sample"
negatives = "random"

[[rankers]]
name = "bm25"

[[rankers]]
name = "overlap"

[[rankers]]
name = "overlap-ensemble"

[[rankers]]
name = "quiet"

[bayes]
enabled = false
"""


def _overlap(context, candidates, weight=1.0):
    last = set(context[-1].lower().split())
    return [weight * len(last & set(c.lower().split())) / (2 + len(set(c.lower().split()))) for c in candidates]


def _ensemble() -> EnsembleRanker:
    return EnsembleRanker([CallableRanker(lambda c, x, w=w: _overlap(c, x, w), name=f"m{w}")
                           for w in (0.6, 0.8, 1.0)], name="overlap-ensemble")


class Quiet:
    """A ranker with a progress option, as the neural rankers have: the study must switch it off."""

    name = "quiet"
    predicted_with: ClassVar[list[bool]] = []

    def __init__(self, *, show_progress: bool = True) -> None:
        self.show_progress = show_progress

    def predict(self, queries):
        from uncertank import Predictions

        type(self).predicted_with.append(self.show_progress)
        scores = np.concatenate([_overlap(c, x, 0.9) for c, x, _ in queries])
        return Predictions(scores, queries.offsets, ranker=self.name)


@hookimpl
def uncertank_rankers():
    return {"overlap": lambda: CallableRanker(_overlap, name="overlap"), "overlap-ensemble": _ensemble,
            "quiet": Quiet}


def _register_study_rankers() -> None:
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("report_folder_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="report-folder-rankers")


@pytest.fixture
def study_rankers():
    _register_study_rankers()
    yield
    get_plugin_manager(refresh=True)


@pytest.fixture(scope="module")
def tiny_study_once(tmp_path_factory):
    """The tiny study run once for the module through ``uncertank run``: its folder, validations, progress flags."""
    calls: list = []
    Quiet.predicted_with.clear()
    path = tmp_path_factory.mktemp("tiny") / "tiny.toml"
    path.write_text(STUDY)
    out = path.parent / "tiny"
    _register_study_rankers()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(runner, "validate_config", lambda config: (calls.append(config), validate_config(config))[1])
            run = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    finally:
        get_plugin_manager(refresh=True)
    assert run.exit_code == 0, run.output
    return out, calls, list(Quiet.predicted_with)


@pytest.fixture
def tiny_study(tiny_study_once, tmp_path, study_rankers):
    """A copy of the tiny study's folder for one test to read and edit."""
    out, calls, predicted_with = tiny_study_once
    copy = tmp_path / "tiny"
    shutil.copytree(out, copy)
    copy.with_suffix(".toml").write_text(STUDY)
    return copy, calls, predicted_with


def _files(out: Path) -> dict[str, bytes]:
    names = ["report.md", "report.html", *[f"figures/{p.name}" for p in sorted((out / "figures").glob("*.png"))]]
    return {n: (out / n).read_bytes() for n in names}


@pytest.mark.slow
def test_report_command_draws_the_same_bytes_from_the_folder_alone(tiny_study):
    out, calls, predicted_with = tiny_study
    assert len(calls) == 2  # the study is validated by the estimate's plan (plan_study), then by run_study
    assert predicted_with and not any(predicted_with)  # no progress bars inside the study's log
    before = _files(out)
    assert len(before) >= 6  # report.md, report.html and the figures
    for name in before:
        (out / name).unlink()
    again = CliRunner().invoke(cli, ["report", str(out)])
    assert again.exit_code == 0, again.output
    assert _files(out) == before
    # the report reads nothing but the folder: a changed number in results.json shows in the report
    data = json.loads((out / "results.json").read_text())
    ev = next(e for e in data["evaluations"] if e["ranker"] == "bm25" and e["condition"] == "in-domain")
    ev["metrics"]["R@1"] = 0.987654
    (out / "results.json").write_text(json.dumps(data))
    assert CliRunner().invoke(cli, ["report", str(out)]).exit_code == 0
    assert "| `bm25` | **0.9877** |" in (out / "report.md").read_text()  # now the best, in bold


@pytest.mark.slow
def test_results_json_records_tests_reuse_and_calibration_detail(tiny_study):
    out, _, _ = tiny_study
    result = StudyResult.from_dict(json.loads((out / "results.json").read_text()))
    sig = result.significance
    assert sig is not None and sig.reference == "overlap" and sig.correction == "holm" and sig.alpha == 0.05
    assert {c.condition for c in sig.tables["in-domain"]} == {"in-domain"}
    assert {c.condition for c in sig.tables["shifted"]} == {"cross-NS random"}
    assert all(c.reference == "overlap" and c.ranker != "overlap" for t in sig.tables.values() for c in t)
    assert {(t.ranker, t.condition) for t in sig.risk} == {("overlap-ensemble", c) for c in result.conditions}
    ov = result.evaluation("overlap", "in-domain")
    assert ov is not None and ov.calibration is not None and ov.reliability is not None
    c = ov.calibration
    assert c.mce_min_count == runner.MCE_MIN_COUNT and c.filled_bins == len(ov.reliability.count)
    assert c.mce_all == pytest.approx(max(abs(m - f) for m, f in zip(ov.reliability.mean_confidence,
                                                                        ov.reliability.fraction_relevant, strict=True)))
    assert result.metric_info["ECE balanced"]["options"]["balanced"] is True
    assert not any(s.resumed for s in result.steps.values())
    # a second run reuses every prediction, and results.json says which steps it reused
    run = CliRunner().invoke(cli, ["run", str(out.with_suffix(".toml")), "--out", str(out)])
    assert run.exit_code == 0, run.output
    steps = StudyResult.from_dict(json.loads((out / "results.json").read_text())).steps
    assert [n for n, s in steps.items() if n.startswith("predict ") and not s.resumed] == []
    assert "| `predict bm25 in-domain` |" in (out / "report.md").read_text()


@pytest.mark.slow
def test_stages_return_their_own_results_and_edit_none_before_them(tmp_path, study_rankers):
    from uncertank.experiment import BayesConfig, ConditionConfig, RankerConfig, StudyConfig

    config = StudyConfig(
        name="stages", train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),),
        rankers=(RankerConfig("overlap"), RankerConfig("overlap-ensemble")),
        max_train_queries=20, max_valid_queries=30, max_test_queries=40, risk_grid=(0.0, 0.5),
        bayes=BayesConfig(enabled=False),
    )
    data = runner.load_data(config)
    rankers, fit_steps = runner.fit_rankers(config, data, tmp_path)
    preds, _ = runner.predict_all(config, data, rankers, fit_steps, tmp_path)
    measured, _ = runner.measure(config, data, preds)
    assert all(e.risk is None and e.selective is None and e.nota is None for e in measured)
    snapshot = copy.deepcopy(measured)
    decisions = decide(config, data, preds)
    combined = with_decisions(measured, decisions)
    assert measured == snapshot  # decide and the merge leave the evaluations they were given alone
    ens = next(e for e in combined if e.ranker == "overlap-ensemble")
    assert ens.risk is decisions[("overlap-ensemble", "in-domain")].risk and ens.risk is not None
    assert ens.nota is not None and ens.selective is not None


def _starred_cells(md: str) -> list[tuple[str, list[str], list[str]]]:
    """(the heading above, the header, the row) of every table row with a † in a cell."""
    out, heading, header = [], "", None
    for line in md.splitlines():
        if line.startswith("#"):
            heading, header = line, None
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif any("†" in c for c in cells):
                out.append((heading, header, cells))
        elif not line.startswith("|"):
            header = None
    return out


def _check_stars(out: Path) -> int:
    """Every † in report.md points at a significant test whose p-values results.json holds; returns the count."""
    data = json.loads((out / "results.json").read_text())
    sig = data["significance"]
    first = data["evaluations"][0]["condition"]
    n = 0
    for heading, header, row in _starred_cells((out / "report.md").read_text()):
        for col, text in zip(header, row, strict=True):
            if "†" not in text:
                continue
            n += 1
            ranker = row[header.index("ranker")].strip("`")
            if heading.startswith("## Risk-aware"):
                cond = row[0].strip("`")
                (test,) = [t for t in sig["risk"] if t["ranker"] == ranker and t["condition"] == cond]
            else:
                m = re.search(r"`([^`]+)`$", heading)
                cond = m.group(1) if heading.startswith("### Condition") and m else first
                table = "in-domain" if cond == first else "shifted"
                (test,) = [c for c in sig["tables"][table]
                           if c["ranker"] == ranker and c["condition"] == cond and c["metric"] == col.strip("`")]
            assert test["significant"] and test["p_value"] is not None
            assert test["p_adjusted"] is not None and test["p_adjusted"] < sig["alpha"], (heading, row)
    return n


def test_every_starred_cell_has_its_p_value_in_results_json(tmp_path):
    from tests.experiment.test_report import make_result

    write_report(make_result(), tmp_path)
    assert _check_stars(tmp_path) >= 3  # in-domain, shifted and risk tables all carry marks
    # and a cell is starred only because results.json says so: clear the stored tests, the marks go
    data = json.loads((tmp_path / "results.json").read_text())
    for family in data["significance"]["tables"].values():
        for c in family:
            c["significant"] = False
    for t in data["significance"]["risk"]:
        t["significant"] = False
    (tmp_path / "results.json").write_text(json.dumps(data))
    render_report(tmp_path)
    assert _starred_cells((tmp_path / "report.md").read_text()) == []


@pytest.mark.slow
def test_every_starred_cell_of_a_run_study_is_in_results_json(tiny_study):
    out, _, _ = tiny_study
    _check_stars(out)
    md = (out / "report.md").read_text()
    assert "p-values in results.json" in md


def test_report_command_on_a_folder_without_results_is_one_line_exit_2(tmp_path):
    run = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert run.exit_code == 2
    assert run.output.strip().splitlines() == [
        f"uncertank report: {tmp_path / 'results.json'} does not exist; give the folder a study wrote "
        "(uncertank run --out DIR)"]
    (tmp_path / "results.json").write_text('{"config": {}}')
    bad = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert bad.exit_code == 2 and f"{tmp_path / 'results.json'}: sizes: missing: this key is required" in bad.output


def test_the_bayesian_stage_silences_arviz_and_pytensor_and_only_them():
    blas = logging.getLogger("pytensor.tensor.blas")
    level = blas.level
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with systems.quiet_bayes():
            warnings.warn_explicit("ArviZ is undergoing a major refactor", FutureWarning, "x.py", 1, module="arviz")
            warnings.warn_explicit("\nArviZ is undergoing a major refactor", FutureWarning, "z.py", 1, module="z")
            warnings.warn_explicit("PyTensor could not link to a BLAS installation.", UserWarning, "c.py", 1,
                                   module="pytensor.link.c.cmodule")
            warnings.warn_explicit("something else", FutureWarning, "y.py", 1, module="mine")
            warnings.warn_explicit("another thing", UserWarning, "y.py", 2, module="mine")
            warnings.warn_explicit("a deprecated ArviZ call", FutureWarning, "a.py", 3, module="arviz.stats")
            assert not blas.isEnabledFor(logging.WARNING)
        assert blas.level == level
    assert [str(w.message) for w in seen] == ["something else", "another thing", "a deprecated ArviZ call"]


def _with_calibration(result: StudyResult, every_bin_over: bool) -> StudyResult:
    evs = []
    for e in result.evaluations:
        if e.probabilistic:
            ece = e.metrics["ECE"]
            if every_bin_over and e.ranker == "bert":  # fitted to the 1:9 base rate, Platt worsens balanced ECE
                platt = {**e.recalibrated["platt"], "ECE balanced": 4 * e.metrics["ECE balanced"]}
                e = replace(e, recalibrated={**e.recalibrated, "platt": platt})
            e = replace(e, metrics={**e.metrics, "ECE quantile": ece} if every_bin_over else e.metrics,
                        calibration=CalibrationDetail(bias=ece if every_bin_over else ece / 3,
                                                      over_bins=4 if every_bin_over else 2, filled_bins=4,
                                                      mce_all=0.8, mce_min_count=30, mce=0.21))
        evs.append(e)
    info = dict(result.metric_info)
    if every_bin_over:
        info = {**info, "ECE quantile": {"kind": "calibration", "higher_is_better": False,
                                         "needs_probabilities": True, "name": "ece",
                                         "options": {"strategy": "quantile"}}}
    return replace(result, evaluations=evs, metric_info=info, config={**result.config, "n_candidates": 10})


def _paragraph_after(md: str, heading: str) -> str:
    return md[md.index(heading) + len(heading):].strip().split("\n\n")[0]


def test_calibration_sentences_say_why_the_numbers_move_apart(tmp_path):
    from tests.experiment.test_report import make_result

    write_report(_with_calibration(make_result(), every_bin_over=True), tmp_path)
    md = (tmp_path / "report.md").read_text()
    detail = _paragraph_after(md, "## Calibration in detail")
    assert "For 9 of 9 ranker-condition pairs every reliability bin over-estimates" in detail
    assert "`ECE` is the overall bias whatever the binning" in detail
    assert "this is why `ECE` and `ECE quantile` are equal for 9 of them" in detail
    assert "counts only bins holding at least 30 pairs" in detail and "9 of 9 pairs have a larger gap" in detail
    rows = [r for r in md.splitlines() if r.startswith("| `in-domain` | `bert` |")]
    assert rows[0].endswith("| +0.2000 | 4 of 4 | 0.8000 | 0.2100 |")
    assert "| bias (score − label) | bins over-estimating | MCE, every bin | MCE, bins ≥ 30 pairs |" in md
    recal = _paragraph_after(md, "## Recalibration")
    assert "lists of 1 relevant and 9 non-relevant candidates, and a recalibrator fitted there learns that base " \
           "rate: it lowers `ECE`, measured over all pairs with the same imbalance, while `ECE balanced`, measured " \
           "on as many non-relevant as relevant pairs, rises for 3 of 9 pairs (most for `bert` under " \
           "`cross-domain chitchat`: `platt` 1.600 against 0.4000 raw)" in recal
    assert "Trust `ECE` for reading a score as a probability" in recal
    # with bins on both sides, the ECE is not the bias and the report says so
    write_report(_with_calibration(make_result(), every_bin_over=False), tmp_path / "b")
    other = _paragraph_after((tmp_path / "b" / "report.md").read_text(), "## Calibration in detail")
    assert "No ranker-condition pair has every bin on the same side" in other
    recal = _paragraph_after((tmp_path / "b" / "report.md").read_text(), "## Recalibration")
    assert "`ECE balanced` does not rise after recalibration for any of them." in recal


def test_wide_tables_scroll_inside_the_page(tmp_path):
    from tests.experiment.test_report import make_result

    write_report(make_result(), tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert ".table-wrap{overflow-x:auto" in page
    assert page.count('<div class="table-wrap" tabindex="0"><table>') == page.count("<table>") >= 8


class _FakeFit:
    """What the Bayesian stage reads of a fit for its posterior predictive curves."""

    def __init__(self, scores, replicates):
        import pandas as pd

        self.data = pd.DataFrame({"score": scores})
        self._rep = np.asarray(replicates, dtype=float)

    def posterior_predictive(self, n, *, seed=None):
        return self._rep[:n]


def test_ppc_curves_are_stored_and_drawn_by_the_report(tmp_path):
    from tests.experiment.test_report import make_result

    rng = np.random.default_rng(0)
    bounded = systems.ppc_curves(_FakeFit(rng.random(50), rng.random((120, 50))), seed=0)
    assert bounded["grid"][0] == 0.0 and bounded["grid"][-1] == 1.0 and float(bounded["outside"]) == 0.0
    assert bounded["replicates"].shape == (systems.PPC_REPLICATES, systems.PPC_GRID)
    assert bounded["observed"].shape == (systems.PPC_GRID,)
    wide = systems.ppc_curves(_FakeFit(rng.random(50), rng.normal(0.5, 0.5, (120, 50))), seed=0)
    assert wide["grid"][0] < 0.0 < 1.0 < wide["grid"][-1] and 0.0 < float(wide["outside"]) < 1.0
    (tmp_path / "bayes").mkdir()
    np.savez(tmp_path / "bayes" / "gaussian-k-ppc.npz", **bounded)
    result = make_result()
    result.bayes["gaussian"].ppc = "bayes/gaussian-k-ppc.npz"
    result.bayes["zoib"].ppc = "bayes/zoib-gone-ppc.npz"
    write_report(result, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "](figures/bayes-gaussian-ppc.png)" in md
    assert (tmp_path / "figures" / "bayes-gaussian-ppc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "The posterior predictive curves of `zoib` (bayes/zoib-gone-ppc.npz) are missing" in md


@pytest.mark.slow
def test_the_oracle_b_and_the_reference_means_with_a_rankers_variances(tiny_study):
    out, _, _ = tiny_study
    result = StudyResult.from_dict(json.loads((out / "results.json").read_text()))
    for cond in result.conditions:
        e = result.evaluation("overlap-ensemble", cond)
        assert e is not None and e.risk is not None
        r = e.risk
        best = max(r.test_curve.values())
        # the oracle is the best b on the test condition, the smallest |b| on ties
        assert r.r1_oracle == pytest.approx(best) and r.test_curve[r.oracle_b] == pytest.approx(best)
        assert abs(r.oracle_b) == min(abs(b) for b, v in r.test_curve.items() if v == pytest.approx(best))
        assert r.r1_oracle >= r.r1_risk_aware - 1e-12 and r.r1_oracle >= r.test_curve[0.0] - 1e-12
        # RA-BERT: the reference's means (overlap, deterministic) with the ensemble's variances
        assert r.mixed_means_from == "overlap" and r.mixed_b in r.test_curve
        reference = result.evaluation("overlap", cond)
        assert reference is not None and reference.risk is None
        assert r.r1_mixed_mean == pytest.approx(reference.metrics["R@1"])
    report = (out / "report.md").read_text()
    assert "An upper bound, not a result" in report and "RA-BERT" in report


def test_moving_samples_onto_other_means_keeps_their_covariances():
    from uncertank import PredictiveSamples
    from uncertank.experiment.decisions import _with_means

    rng = np.random.default_rng(0)
    samples = PredictiveSamples(rng.random((30, 7)), np.array([0, 3, 7]))
    means = rng.random(7)
    moved = _with_means(samples, means)
    np.testing.assert_allclose(moved.samples.mean(axis=0), means)
    np.testing.assert_allclose(np.cov(moved.samples.T), np.cov(samples.samples.T))
