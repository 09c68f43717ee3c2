"""Conformal guarantees on the full study's data (docs/conformal.md): the record is built from a study's
results.json, it is consistent in itself, and the docs quote its rendering."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "conformal_full.py"
RECORD = ROOT / "docs" / "results" / "conformal_full.json"
STUDY = ROOT / "docs" / "studies" / "conformal_full.toml"


def _script() -> dict[str, Any]:
    return runpy.run_path(str(SCRIPT), run_name="conformal_full")


def _outcome(threshold: float, k: int, n: int, size: float, *, shifted: bool, ref_size: float | None,
             p: float | None) -> Any:
    from uncertank.experiment.result import ConformalOutcome

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    weighted: dict[str, Any] = {}
    if shifted:
        wk = min(n, k + 5)
        wci = binomtest(wk, n).proportion_ci(confidence_level=0.95, method="exact")
        weighted = {"weighted_coverage": wk / n, "weighted_coverage_lower": float(wci.low),
                    "weighted_coverage_upper": float(wci.high), "weighted_mean_size": size + 0.5,
                    "effective_size": 15.0}
    return ConformalOutcome(
        score="score", alpha=0.1, delta=0.1, n_calibration=20, n_test=n, threshold=threshold, feasible=True,
        coverage=k / n, coverage_lower=float(ci.low), coverage_upper=float(ci.high), mean_size=size,
        abstain_threshold=0.9, answer_rate=0.25, error_rate=0.1, exchangeable=not shifted,
        exchangeability_statistic=0.4 if shifted else 0.1, exchangeability_p=0.001 if shifted else 0.6,
        curve_alpha=[0.05, 0.1, 0.2], curve_coverage=[min(1.0, k / n + 0.05), k / n, k / n - 0.1],
        curve_size=[size + 1.0, size, size - 1.0], **weighted,
        reference=None if ref_size is None else "bert", reference_mean_size=ref_size, size_p_value=p,
    )


_SIZES = {"bert": (3.0, 4.0), "mc_dropout": (2.5, 4.5), "laplace": (3.0, 4.0), "sngp": (2.0, 5.0)}


def _study(tmp_path: Path, name: str = "study", rankers: tuple[str, ...] = ("bert", "mc_dropout", "laplace"),
           bert_size: float = 3.0) -> Path:
    from uncertank.experiment.result import Evaluation, StepInfo, StudyResult

    evs = []
    sizes = {r: _SIZES[r] for r in rankers}
    sizes["bert"] = (bert_size, 4.0)
    for ranker, (in_size, out_size) in sizes.items():
        for cond, size, k in (("in-domain", in_size, 36), ("cross-NS random", out_size, 28)):
            ref = None if ranker == "bert" else sizes["bert"][cond != "in-domain"]
            p = None if ranker in ("bert", "laplace") else 0.01
            evs.append(Evaluation(ranker, cond, True, ranker != "bert", {"R@1": 0.5, "MAP": 0.6},
                                  conformal=_outcome(0.4, k, 40, size, shifted=cond != "in-domain", ref_size=ref,
                                                     p=p)))
    steps = {"predict bert in-domain": StepInfo("k", 12.34), "fit laplace": StepInfo("k", 100.0)}
    study = StudyResult({"reference": "bert"}, {}, {}, evs, steps=steps)
    out = tmp_path / name
    out.mkdir()
    (out / "results.json").write_text(json.dumps(study.to_dict()))
    (out / "run.log").write_text("2026-01-01 10:00:00.000 [study] study \"x\", uncertank 0.1.0\n"
                                 "    progress without a stamp\n"
                                 "2026-01-01 10:30:15.500 [study] done\n")
    return out


def _check(record: dict[str, Any]) -> None:
    """What must hold of any record: the numbers agree with one another and with what the study promises to compute.

    Coverage against 1 - alpha is not asserted: the guarantee is marginal, over the calibration draw too.
    """
    ref = record["reference"]
    assert ref in record["rankers"]
    alpha = record["alpha"]
    for ranker in record["rankers"]:
        by_cond = record["conformal"][ranker]
        assert sorted(by_cond) == sorted(record["conditions"])  # the record's keys are sorted
        # calibrated once, on the validation queries: one threshold per ranker for every condition
        assert len({c["threshold"] for c in by_cond.values()}) == 1
        assert len({c["abstain_threshold"] for c in by_cond.values()}) == 1
        for i, cond in enumerate(record["conditions"]):
            c = by_cond[cond]
            assert c["alpha"] == alpha and c["n_calibration"] == record["n_calibration"]
            n = c["n_test"]
            k = round(c["coverage"] * n)
            assert c["coverage"] == pytest.approx(k / n, abs=1e-12)
            ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
            assert (c["coverage_lower"], c["coverage_upper"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
            assert 0.0 <= c["coverage_lower"] <= c["coverage"] <= c["coverage_upper"] <= 1.0
            assert c["mean_size"] >= 0.0
            assert 0.0 <= c["answer_rate"] <= 1.0
            assert (c["error_rate"] is None) == (c["answer_rate"] == 0.0)
            assert c["error_rate"] is None or 0.0 <= c["error_rate"] <= 1.0
            assert c["exchangeable"] == (c["exchangeability_p"] >= 0.05)
            # the curve's point at alpha is the table's; the sets are nested, so coverage and size fall as alpha grows
            j = c["curve_alpha"].index(alpha)
            assert c["curve_coverage"][j] == pytest.approx(c["coverage"])
            assert c["curve_size"][j] == pytest.approx(c["mean_size"])
            order = sorted(range(len(c["curve_alpha"])), key=lambda m: c["curve_alpha"][m])
            cov, size = [c["curve_coverage"][m] for m in order], [c["curve_size"][m] for m in order]
            assert cov == sorted(cov, reverse=True) and size == sorted(size, reverse=True)
            # weighted sets under every condition but the first
            assert (c["weighted_coverage"] is None) == (i == 0)
            if c["weighted_coverage"] is not None:
                assert c["weighted_coverage_lower"] <= c["weighted_coverage"] <= c["weighted_coverage_upper"]
                assert 0.0 <= c["effective_size"] <= c["n_calibration"] + 1e-9
            # the paired comparison is against the reference's own sets
            if ranker == ref:
                assert c["reference"] is None and c["size_p_value"] is None
            else:
                assert c["reference"] == ref
                assert c["reference_mean_size"] == pytest.approx(record["conformal"][ref][cond]["mean_size"])
                if c["size_p_value"] is None:  # the sizes never differ
                    assert c["mean_size"] == pytest.approx(c["reference_mean_size"])


def test_the_record_is_the_studys_conformal_outcomes(tmp_path):
    script = _script()
    record = script["summarise"](_study(tmp_path, "conformal_full"))
    assert record["rankers"] == ["bert", "mc_dropout", "laplace"]
    assert record["conditions"] == ["in-domain", "cross-NS random"]
    assert record["conformal"]["mc_dropout"]["in-domain"]["mean_size"] == 2.5
    assert record["conformal"]["mc_dropout"]["cross-NS random"]["reference_mean_size"] == 4.0
    assert record["metrics"]["bert"]["in-domain"] == {"MAP": 0.6, "R@1": 0.5}
    (study,) = record["studies"]
    assert study["step_seconds"] == {"fit laplace": 100.0, "predict bert in-domain": 12.3}
    assert study["run_log"] == {"seconds": 1815.5, "runs": 1}
    assert study["command"] == "uncertank run docs/studies/conformal_full.toml --out .cache/conformal_full"
    _check(record)
    table = script["render"](record)
    assert "| in-domain | `mc_dropout` | 0.400 | 0.900 [0.763, 0.972] | 2.50 (3.00, p 0.010) † |" in table
    assert "| cross-NS random | `laplace` | 0.400 | 0.700 [0.535, 0.834] | 4.00 (4.00, p –) |" in table
    assert table.splitlines()[2].startswith("| in-domain | `bert` |")


def test_two_studies_merge_into_one_record_when_the_ranker_they_share_agrees(tmp_path):
    summarise = _script()["summarise"]
    first = _study(tmp_path, "conformal_full")
    second = _study(tmp_path, "conformal_full_gp", ("bert", "sngp"))
    record = summarise(first, second)
    assert record["rankers"] == ["bert", "mc_dropout", "laplace", "sngp"]
    assert record["conformal"]["sngp"]["in-domain"]["mean_size"] == 2.0
    assert [s["command"] for s in record["studies"]] == [
        "uncertank run docs/studies/conformal_full.toml --out .cache/conformal_full",
        "uncertank run docs/studies/conformal_full_gp.toml --out .cache/conformal_full_gp"]
    assert [s["rankers"] for s in record["studies"]] == [["bert", "mc_dropout", "laplace"], ["bert", "sngp"]]
    _check(record)


def test_studies_that_disagree_on_a_shared_ranker_or_the_data_give_no_record(tmp_path):
    summarise = _script()["summarise"]
    first = _study(tmp_path, "conformal_full")
    other_bert = _study(tmp_path, "conformal_full_gp", ("bert", "sngp"), bert_size=3.5)
    with pytest.raises(SystemExit, match=r"conformal_full_gp: bert's conformal differ from those of an earlier"):
        summarise(first, other_bert)
    other_seed = _study(tmp_path, "other_seed", ("bert", "sngp"))
    results = json.loads((other_seed / "results.json").read_text())
    results["config"]["seed"] = 1
    (other_seed / "results.json").write_text(json.dumps(results))
    with pytest.raises(SystemExit, match=r"other_seed: its data is .*'seed': 1.*the studies must share the data"):
        summarise(first, other_seed)
    fewer = _study(tmp_path, "fewer", ("bert", "sngp"))
    results = json.loads((fewer / "results.json").read_text())
    results["evaluations"] = [e for e in results["evaluations"] if e["condition"] == "in-domain"]
    (fewer / "results.json").write_text(json.dumps(results))
    with pytest.raises(SystemExit, match=r"fewer: its conditions is \['in-domain'\]"):
        summarise(first, fewer)


def test_the_script_writes_the_record_and_prints_the_table(tmp_path, capsys):
    out = tmp_path / "record.json"
    _script()["main"]([str(_study(tmp_path)), "--out", str(out)])
    assert json.loads(out.read_text())["alpha"] == 0.1
    assert "| cross-NS random | `bert` |" in capsys.readouterr().out


def test_a_study_without_its_results_or_its_stage_names_the_command(tmp_path):
    script = _script()
    with pytest.raises(SystemExit, match=r"run `uncertank run docs/studies/conformal_full_gp\.toml --out "
                                         r"\.cache/conformal_full_gp` first"):
        script["summarise"](tmp_path / "conformal_full_gp")
    with pytest.raises(SystemExit, match=rf"run `uncertank run STUDY\.toml --out {tmp_path}` first"):
        script["summarise"](tmp_path)
    from uncertank.experiment.result import Evaluation, StudyResult

    study = StudyResult({"reference": "bert"}, {}, {}, [Evaluation("bert", "in-domain", True, False, {})])
    (tmp_path / "results.json").write_text(json.dumps(study.to_dict()))
    with pytest.raises(SystemExit, match=r"bert / in-domain has no conformal outcome"):
        script["summarise"](tmp_path)


def test_the_study_file_is_the_full_studys_data_with_the_checkpoint_rankers():
    from uncertank.experiment.config import load_config

    config = load_config(STUDY)
    full = load_config(ROOT / "docs" / "studies" / "full.toml")
    for key in ("train_dataset", "train_negatives", "n_candidates", "max_valid_queries", "max_test_queries",
                "seed", "reference", "conditions"):
        assert getattr(config, key) == getattr(full, key), key
    assert [r.key for r in config.rankers] == ["bert", "mc_dropout", "laplace"]
    assert config.conformal.enabled and config.conformal == type(config.conformal)()
    assert config.bayes.enabled is False


@pytest.mark.parametrize(("study", "recipe", "trained"), [
    ("conformal_full_gp.toml", "real_run.toml", ["sngp", "gpf_bert", "pgdrr"]),
    ("conformal_full_ensemble.toml", "real_run_ensemble.toml", ["ensemble"]),
])
def test_the_other_studies_are_the_same_data_with_the_real_runs_rankers(study, recipe, trained):
    """The GP rankers' and the ensemble's studies: the checkpoint study's data, settings and bert, and the rankers
    trained as the real run trains them, saved where full.toml reads them."""
    from uncertank.experiment.config import load_config

    config = load_config(ROOT / "docs" / "studies" / study)
    checkpoints = load_config(STUDY)
    real_run = {r.key: r for r in load_config(ROOT / "docs" / "studies" / recipe).rankers}
    for key in ("train_dataset", "train_negatives", "n_candidates", "max_valid_queries", "max_test_queries",
                "seed", "reference", "conditions", "metrics", "conformal", "bayes"):
        assert getattr(config, key) == getattr(checkpoints, key), key
    assert [r.key for r in config.rankers] == ["bert", *trained]
    assert config.rankers[0] == checkpoints.rankers[0]  # the same bert checkpoint
    for rc in config.rankers[1:]:
        want = real_run[rc.key]
        assert (rc.init_from, rc.params, rc.save_to) == (want.init_from, want.params, want.save_to), rc.key


def test_the_committed_record_is_consistent_and_the_docs_quote_it():
    if not RECORD.exists():
        pytest.fail(f"{RECORD} is missing: run `uncertank run docs/studies/conformal_full.toml --out "
                    ".cache/conformal_full`, then `python docs/scripts/conformal_full.py`")
    record = json.loads(RECORD.read_text())
    _check(record)
    assert record["rankers"] == ["bert", "mc_dropout", "laplace", "sngp", "gpf_bert", "pgdrr", "ensemble"]
    assert [s["study"] for s in record["studies"]] == ["docs/studies/conformal_full.toml",
                                                       "docs/studies/conformal_full_gp.toml",
                                                       "docs/studies/conformal_full_ensemble.toml"]
    # the ensemble is the full study's model (docs/results/full_study.json)
    full = json.loads((ROOT / "docs" / "results" / "full_study.json").read_text())["results"]["in-domain"]
    assert record["metrics"]["ensemble"]["in-domain"]["R@1"] == pytest.approx(full["ensemble"]["R@1"], abs=1e-12)
    assert record["conditions"] == ["in-domain", "cross-NS random", "cross-NS embedding", "cross-domain chitchat"]
    assert record["n_calibration"] == 200
    assert all(c["n_test"] == 600 for by_cond in record["conformal"].values() for c in by_cond.values())
    assert _script()["render"](record) in (ROOT / "docs" / "conformal.md").read_text()
