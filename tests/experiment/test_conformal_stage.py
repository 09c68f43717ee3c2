"""The study's conformal stage (thresholds with a guarantee), its ``[conformal]`` table and its report section.

The stage runs on small synthetic query sets and scores (made-up numbers, not results) and is checked against
plain loops over the queries written here, and against scipy for the interval and the paired test.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from uncertank import PredictiveSamples, QuerySet
from uncertank.experiment import StudyConfigError, load_config
from uncertank.experiment.config import BayesConfig, ConditionConfig, ConformalConfig, RankerConfig, StudyConfig
from uncertank.experiment.guarantees import guarantees, score_features, with_guarantees
from uncertank.experiment.result import ConformalOutcome, Evaluation, StudyResult
from uncertank.experiment.stages import RankerPrediction, StudyData

WIDTH = 6


def _queries(n: int, rng: np.random.Generator) -> QuerySet:
    """``n`` queries of ``WIDTH`` candidates, one relevant at a random position."""
    offsets = np.arange(0, n * WIDTH + 1, WIDTH, dtype=np.int64)
    labels = np.zeros(n * WIDTH, dtype=np.int64)
    labels[offsets[:-1] + rng.integers(0, WIDTH, n)] = 1
    return QuerySet([[f"q{i}"] for i in range(n)], [f"c{j}" for j in range(n * WIDTH)], offsets, labels)


def _scores(qs: QuerySet, rng: np.random.Generator, *, advantage: float = 1.5, offset: float = 0.0) -> np.ndarray:
    """Raw scores: N(0, 1) plus ``advantage`` for the relevant candidate, plus ``offset``."""
    return rng.normal(size=qs.n_pairs) + advantage * (qs.labels > 0) + offset


def _config(**conformal) -> StudyConfig:
    return StudyConfig(
        name="synthetic", train_dataset="x",
        conditions=(ConditionConfig("in-domain", "x"), ConditionConfig("shifted", "x")),
        rankers=(RankerConfig("ref"), RankerConfig("other"), RankerConfig("draws")),
        bayes=BayesConfig(enabled=False), conformal=ConformalConfig(**conformal),
    )


def _study(seed: int = 0, n_valid: int = 80, n_test: int = 60):
    """Data and predictions: ``ref`` and ``other`` deterministic, ``draws`` stochastic; ``shifted`` is harder."""
    rng = np.random.default_rng(seed)
    valid, ind, shifted = _queries(n_valid, rng), _queries(n_test, rng), _queries(n_test, rng)
    data = StudyData(valid, valid, {"in-domain": ind, "shifted": shifted})
    preds = {}
    for ranker, adv in (("ref", 1.0), ("other", 2.5), ("draws", 1.5)):
        for split, qs, a, off in (("valid", valid, adv, 0.0), ("in-domain", ind, adv, 0.0),
                                  ("shifted", shifted, adv / 3, -1.0)):
            mean = _scores(qs, rng, advantage=a, offset=off)
            if ranker == "draws":
                draws = mean + rng.normal(scale=0.5, size=(8, qs.n_pairs))
                samples = PredictiveSamples(draws, qs.offsets, ranker=ranker)
                preds[(ranker, split)] = RankerPrediction(samples.mean(), samples, False)
            else:
                preds[(ranker, split)] = RankerPrediction(mean, None, False)
    return data, preds


def _loop_threshold(scores: np.ndarray, qs: QuerySet, alpha: float) -> float:
    """Split conformal by hand: the floor(alpha (n + 1))-th smallest best relevant score of a query."""
    best = []
    for q in range(qs.n_queries):
        s, y = scores[qs.offsets[q]:qs.offsets[q + 1]], qs.labels[qs.offsets[q]:qs.offsets[q + 1]]
        best.append(max(s[y > 0]) if (y > 0).any() else -math.inf)
    k = math.floor(alpha * (len(best) + 1))
    return -math.inf if k == 0 else sorted(best)[k - 1]


def _loop_sets(scores: np.ndarray, qs: QuerySet, t: float) -> tuple[list[bool], list[int]]:
    covered, sizes = [], []
    for q in range(qs.n_queries):
        s, y = scores[qs.offsets[q]:qs.offsets[q + 1]], qs.labels[qs.offsets[q]:qs.offsets[q + 1]]
        chosen = [j for j in range(len(s)) if s[j] >= t]
        covered.append(any(y[j] > 0 for j in chosen))
        sizes.append(len(chosen))
    return covered, sizes


def test_coverage_sizes_and_interval_match_a_loop_over_the_queries():
    data, preds = _study()
    config = _config(alpha=0.1, alphas=[0.05, 0.2, 0.3])
    out = guarantees(config, data, preds)
    assert set(out) == {(r, c) for r in ("ref", "other", "draws") for c in ("in-domain", "shifted")}
    for (ranker, cond), o in out.items():
        t = _loop_threshold(preds[(ranker, "valid")].mean, data.valid, 0.1)
        assert o.threshold == pytest.approx(t)
        qs = data.tests[cond]
        covered, sizes = _loop_sets(preds[(ranker, cond)].mean, qs, t)
        assert o.coverage == pytest.approx(np.mean(covered))
        assert o.mean_size == pytest.approx(np.mean(sizes))
        ci = sps.binomtest(int(sum(covered)), len(covered)).proportion_ci(method="exact")
        assert (o.coverage_lower, o.coverage_upper) == pytest.approx((ci.low, ci.high))
        assert o.n_calibration == 80 and o.n_test == 60 and o.feasible
        assert o.score == ("mean" if ranker == "draws" else "score")
        for a, cov, size in zip(o.curve_alpha, o.curve_coverage, o.curve_size, strict=True):
            c, s = _loop_sets(preds[(ranker, cond)].mean, qs, _loop_threshold(preds[(ranker, "valid")].mean,
                                                                                data.valid, a))
            assert (cov, size) == pytest.approx((np.mean(c), np.mean(s)))
        assert o.curve_alpha == [0.05, 0.2, 0.3]


def test_abstention_answers_above_its_threshold_and_counts_errors_among_answered():
    data, preds = _study(n_valid=400, n_test=200)
    out = guarantees(_config(alpha=0.3, delta=0.2), data, preds)
    certified = 0
    for (ranker, cond), o in out.items():
        qs, s = data.tests[cond], preds[(ranker, cond)].mean
        if o.abstain_threshold is None:
            assert o.answer_rate == 0.0 and o.error_rate is None
            continue
        answered = wrong = 0
        for q in range(qs.n_queries):
            seg = slice(qs.offsets[q], qs.offsets[q + 1])
            top = int(np.argmax(s[seg]))
            if s[seg][top] >= o.abstain_threshold:
                answered += 1
                wrong += qs.labels[seg][top] <= 0
        assert o.answer_rate == pytest.approx(answered / qs.n_queries)
        if answered:
            assert o.error_rate == pytest.approx(wrong / answered)
            certified += 1
        else:
            assert o.error_rate is None
    assert certified > 0


def test_set_sizes_are_compared_with_the_reference_by_scipys_paired_t_test():
    data, preds = _study()
    out = guarantees(_config(), data, preds)
    for cond in ("in-domain", "shifted"):
        assert out[("ref", cond)].reference is None and out[("ref", cond)].size_p_value is None
        qs = data.tests[cond]
        ref_sizes = _loop_sets(preds[("ref", cond)].mean, qs,
                               _loop_threshold(preds[("ref", "valid")].mean, data.valid, 0.1))[1]
        for ranker in ("other", "draws"):
            o = out[(ranker, cond)]
            sizes = _loop_sets(preds[(ranker, cond)].mean, qs,
                               _loop_threshold(preds[(ranker, "valid")].mean, data.valid, 0.1))[1]
            assert o.reference == "ref"
            assert o.reference_mean_size == pytest.approx(np.mean(ref_sizes))
            assert o.size_p_value == pytest.approx(sps.ttest_rel(sizes, ref_sizes).pvalue)
    # the better-separating ranker gives smaller sets at the same guarantee
    assert out[("other", "in-domain")].mean_size < out[("other", "in-domain")].reference_mean_size
    assert out[("other", "in-domain")].size_p_value < 0.05


def test_a_stochastic_rankers_conformity_score_is_the_one_configured():
    data, preds = _study()
    samples = preds[("draws", "valid")].samples
    for score, extra, expect in (("quantile", {"quantile": 0.2}, np.quantile(samples.samples, 0.2, axis=0)),
                                 ("lower", {"k_std": 2.0}, samples.mean() - 2.0 * samples.std())):
        out = guarantees(_config(score=score, **extra), data, preds)
        assert out[("draws", "in-domain")].score == score
        assert out[("draws", "in-domain")].threshold == pytest.approx(_loop_threshold(expect, data.valid, 0.1))
        assert out[("ref", "in-domain")].score == "score"


def test_exchangeable_queries_are_covered_near_the_target_and_shift_is_named():
    rng = np.random.default_rng(3)
    n = 1500
    valid, test, shifted = _queries(n, rng), _queries(n, rng), _queries(n, rng)
    data = StudyData(valid, valid, {"in-domain": test, "shifted": shifted})
    preds = {("ref", "valid"): RankerPrediction(_scores(valid, rng), None, False),
             ("ref", "in-domain"): RankerPrediction(_scores(test, rng), None, False),
             ("ref", "shifted"): RankerPrediction(_scores(shifted, rng, advantage=0.3, offset=-1.0), None, False)}
    config = replace(_config(alpha=0.1, alphas=[0.1, 0.2]), rankers=(RankerConfig("ref"),))
    out = guarantees(config, data, preds)
    o = out[("ref", "in-domain")]
    assert abs(o.coverage - 0.9) < 0.03
    assert o.coverage_lower <= 0.9 <= o.coverage_upper + 0.01
    assert o.exchangeable and o.weighted_coverage is None
    assert [abs(c - (1 - a)) < 0.03 for a, c in zip(o.curve_alpha, o.curve_coverage, strict=True)] == [True, True]
    s = out[("ref", "shifted")]
    assert not s.exchangeable and s.exchangeability_p < 0.05
    assert s.coverage_upper < 0.9  # the guarantee is broken under the shift
    assert s.weighted_coverage is not None and s.effective_size is not None


def test_weighting_restores_coverage_under_a_covariate_shift():
    """Two kinds of queries, told apart by their scores; validation holds few hard ones, the test mostly hard ones."""
    rng = np.random.default_rng(5)

    def mixed(n: int, hard_share: float) -> tuple[QuerySet, np.ndarray]:
        qs = _queries(n, rng)
        hard = np.repeat(rng.random(n) < hard_share, WIDTH)
        easy_scores = _scores(qs, rng, advantage=3.0)
        hard_scores = _scores(qs, rng, advantage=1.0, offset=-3.0)
        return qs, np.where(hard, hard_scores, easy_scores)

    (valid, vs), (test, ts) = mixed(3000, 0.15), mixed(1500, 0.85)
    data = StudyData(valid, valid, {"in-domain": valid, "shifted": test})
    preds = {("ref", "valid"): RankerPrediction(vs, None, False),
             ("ref", "in-domain"): RankerPrediction(vs, None, False),
             ("ref", "shifted"): RankerPrediction(ts, None, False)}
    config = replace(_config(alpha=0.1), rankers=(RankerConfig("ref"),))
    s = guarantees(config, data, preds)[("ref", "shifted")]
    assert s.coverage < 0.8
    assert s.weighted_coverage is not None and s.weighted_coverage > 0.85
    assert s.weighted_mean_size > s.mean_size  # coverage bought with larger sets
    assert 0 < s.effective_size < 3000
    unweighted = guarantees(replace(config, conformal=ConformalConfig(weighted=False)), data, preds)
    assert unweighted[("ref", "shifted")].weighted_coverage is None


def test_the_stage_is_off_when_disabled_and_without_validation_labels():
    data, preds = _study()
    assert guarantees(_config(enabled=False), data, preds) == {}
    unlabelled = QuerySet(data.valid.contexts, data.valid.candidates, data.valid.offsets)
    assert guarantees(_config(), StudyData(data.train, unlabelled, data.tests), preds) == {}
    tests = {**data.tests, "shifted": QuerySet(data.tests["shifted"].contexts, data.tests["shifted"].candidates,
                                               data.tests["shifted"].offsets)}
    assert {c for _, c in guarantees(_config(), StudyData(data.train, data.valid, tests), preds)} == {"in-domain"}


def test_score_features_against_a_loop():
    rng = np.random.default_rng(1)
    qs = _queries(7, rng)
    from uncertank import Predictions

    s = rng.normal(size=qs.n_pairs)
    got = score_features(Predictions(s, qs.offsets, probabilistic=False))
    for q in range(qs.n_queries):
        seg = np.sort(s[qs.offsets[q]:qs.offsets[q + 1]])[::-1]
        assert got[q] == pytest.approx([seg[0], seg.mean(), seg.std(), seg[0] - seg[1]])


def test_with_guarantees_attaches_outcomes_and_leaves_the_rest():
    data, preds = _study()
    out = guarantees(_config(), data, preds)
    evs = [Evaluation("ref", "in-domain", False, False, {"R@1": 0.5}), Evaluation("nobody", "x", False, False, {})]
    done = with_guarantees(evs, out)
    assert done[0].conformal == out[("ref", "in-domain")] and done[1].conformal is None
    assert evs[0].conformal is None  # the evaluations given are left as they are


# -- the [conformal] table at the door --------------------------------------------------------------------------------

STUDY = """
[study]
train_dataset = "ubuntu-sample"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"

[[rankers]]
name = "bm25"

[bayes]
enabled = false
"""


def _door(tmp_path: Path, table: str) -> list[str]:
    path = tmp_path / "study.toml"
    path.write_text(STUDY + table)
    with pytest.raises(StudyConfigError) as info:
        load_config(path)
    return str(info.value).splitlines()


def test_a_good_conformal_table_is_read_with_its_defaults(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(STUDY + '\n[conformal]\nalpha = 0.2\nalphas = [0.1, 0.3]\nscore = "lower"\nk_std = 2\n')
    conf = load_config(path).conformal
    assert (conf.alpha, conf.alphas, conf.score, conf.k_std, conf.delta, conf.weighted, conf.enabled) == \
        (0.2, (0.1, 0.3), "lower", 2.0, 0.1, True, True)
    path.write_text(STUDY)
    assert load_config(path).conformal == ConformalConfig()


@pytest.mark.parametrize(("table", "line"), [
    ("alpha = 0", "conformal.alpha: must be > 0.0; got 0"),
    ("alpha = 1.0", "conformal.alpha: must be < 1.0; got 1.0"),
    ("alpha = \"0.1\"", "conformal.alpha: must be a number; got the string '0.1'"),
    ("delta = 1.5", "conformal.delta: must be < 1.0; got 1.5"),
    ("alphas = []", "conformal.alphas: must hold at least 1 value; got an empty list"),
    ("alphas = [0.1, -0.2]", "conformal.alphas[1]: must be > 0.0; got -0.2"),
    ("alphas = [0.1, 0.2, 0.1]", "conformal.alphas[2]: 0.1 is already alphas[0]; give each level once"),
    ("score = \"median\"", "conformal.score: must be one of 'mean', 'quantile' or 'lower'; got the string 'median'"),
    ("quantile = 0.2", 'conformal.quantile: applies to score = "quantile"; got score = "mean": leave it out'),
    ("score = \"quantile\"\nk_std = 2", 'conformal.k_std: applies to score = "lower"; got score = "quantile": '
                                        "leave it out"),
    ("score = \"quantile\"\nquantile = 1.5", "conformal.quantile: must be <= 1.0; got 1.5"),
    ("score = \"lower\"\nk_std = -1", "conformal.k_std: must be >= 0.0; got -1"),
    ("weighted = \"yes\"", "conformal.weighted: must be true or false; got the string 'yes'"),
    ("level = 0.05", "conformal.level: unknown key; known: enabled, alpha, delta, alphas, score, quantile, k_std, "
                     "weighted"),
])
def test_each_bad_conformal_value_is_one_line_with_its_path(tmp_path, table, line):
    assert _door(tmp_path, f"\n[conformal]\n{table}\n") == [line]


def test_conformal_must_be_one_table(tmp_path):
    assert _door(tmp_path, "\n[[conformal]]\nalpha = 0.1\n") == ["conformal: must be a table; got a list of 1"]
    path = tmp_path / "inside.toml"
    path.write_text(STUDY.replace('train_dataset = "ubuntu-sample"', 'train_dataset = "ubuntu-sample"\n'
                                  "conformal = { alpha = 0.1 }"))
    with pytest.raises(StudyConfigError, match=r"study.conformal: give conformal as \[conformal\] table"):
        load_config(path)


def test_a_score_of_draws_needs_a_stochastic_ranker(tmp_path):
    pytest.importorskip("bm25s")
    from uncertank.experiment.preflight import validate_config

    path = tmp_path / "study.toml"
    path.write_text(STUDY + '\n[conformal]\nscore = "quantile"\n')
    with pytest.raises(StudyConfigError) as info:
        validate_config(load_config(path))
    assert str(info.value).splitlines() == [
        "conformal.score: 'quantile' reads a stochastic ranker's draws, and none of the study's rankers ('bm25') "
        "gives draws; leave score out (the mean) or add a stochastic ranker"]
    path.write_text(STUDY + '\n[conformal]\nenabled = false\nscore = "quantile"\n')
    validate_config(load_config(path))  # a stage that does not run asks nothing of the rankers


# -- the results file and the report ----------------------------------------------------------------------------------


def _report_result():
    """test_report's synthetic study, each evaluation with a made-up conformal outcome."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_report import make_result
    finally:
        sys.path.pop(0)
    result = make_result()
    evaluations = []
    for e in result.evaluations:
        shifted = e.condition == "cross-domain chitchat"
        smaller = e.ranker == "mc_dropout"
        outcome = ConformalOutcome(
            score="mean" if e.stochastic else "score", alpha=0.1, delta=0.1, n_calibration=100, n_test=60,
            threshold=0.42, feasible=True, coverage=0.6 if shifted else 0.9, coverage_lower=0.47 if shifted else 0.8,
            coverage_upper=0.72 if shifted else 0.96, mean_size=2.0 if smaller else 3.0, abstain_threshold=None
            if e.ranker == "bm25" else 0.8, answer_rate=0.0 if e.ranker == "bm25" else 0.4,
            error_rate=None if e.ranker == "bm25" else 0.08, exchangeable=not shifted, exchangeability_statistic=0.3,
            exchangeability_p=0.001 if shifted else 0.5,
            **({"weighted_coverage": 0.88, "weighted_coverage_lower": 0.77, "weighted_coverage_upper": 0.95,
                "weighted_mean_size": 4.5, "effective_size": 20.0} if e.condition != "in-domain" else {}),
            curve_alpha=[0.05, 0.1, 0.2], curve_coverage=[0.95, 0.6 if shifted else 0.9, 0.8], curve_size=[4, 3, 2],
            **({} if e.ranker == "bert" else {"reference": "bert", "reference_mean_size": 3.0,
                                              "size_p_value": 0.001 if smaller else 0.6}),
        )
        evaluations.append(replace(e, conformal=outcome))
    return replace(result, evaluations=evaluations)


def test_the_report_reads_the_outcome_in_a_sentence_a_table_and_a_figure(tmp_path):
    result = _report_result()
    from uncertank.experiment.report import write_report

    write_report(result, tmp_path)
    md = (tmp_path / "report.md").read_text()
    section = md.split("## Thresholds with a guarantee", 1)[1].split("\n## ", 1)[0]
    assert "| condition | ranker | score | threshold | coverage [95% CI] | mean size (`bert`, p) |" in section
    assert "At the same guarantee, `mc_dropout / in-domain`" in section and "smaller sets than `bert`" in section
    assert "Coverage falls below 0.9 (its 95% interval lies under it) for `bm25 / cross-domain chitchat`" in section
    assert "Weighting by a domain classifier restores it for `bm25 / cross-domain chitchat`" in section
    assert "rejects for 4 of 12 ranker-condition pairs" in section
    assert "| `in-domain` | `mc_dropout` | mean | 0.4200 | 0.9000 [0.8000, 0.9600] | 2.000 (3.000, p 0.001)† |" \
        in section
    assert "| `in-domain` | `bm25` | score | 0.4200 | 0.9000 [0.8000, 0.9600] | 3.000 (3.000, p 0.600) | never | 0 " \
        "| – | yes (p 0.500) | – | – |" in section
    assert "Calibrated on the 100 validation queries (the training domain) at α = 0.1:" in section
    assert (tmp_path / "figures" / "conformal-coverage.png").stat().st_size > 1000
    assert "figures/conformal-coverage.png" in section
    again = StudyResult.from_json((tmp_path / "results.json").read_text())
    assert [e.conformal for e in again.evaluations] == [e.conformal for e in result.evaluations]


def test_an_old_results_file_without_the_outcome_loads_and_renders(tmp_path):
    result = _report_result()
    document = result.to_dict()
    for ev in document["evaluations"]:
        del ev["conformal"]
    old = StudyResult.from_dict(document)
    assert all(e.conformal is None for e in old.evaluations)
    from uncertank.experiment.report import write_report

    write_report(old, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "## Thresholds with a guarantee\n\nThe conformal stage was not run" in md
    assert not (tmp_path / "figures" / "conformal-coverage.png").exists()


def test_a_coverage_curve_of_unequal_lengths_is_refused_with_its_path():
    from uncertank.experiment.result import ResultsFileError

    document = _report_result().to_dict()
    document["evaluations"][2]["conformal"]["curve_size"] = [1.0]
    with pytest.raises(ResultsFileError, match=r"evaluations\[2\]\.conformal: must hold one curve_coverage and "
                                               r"curve_size per curve_alpha; got 3, 3 and 1"):
        StudyResult.from_dict(document)
    document["evaluations"][2]["conformal"]["coverage"] = "high"
    with pytest.raises(ResultsFileError, match=r"evaluations\[2\]\.conformal\.coverage: must be a number"):
        StudyResult.from_dict(document)


# -- a whole study ---------------------------------------------------------------------------------------------------

_WORDS = ["disk", "mount", "kernel", "wifi", "driver", "sound", "grub", "boot", "apt", "python", "screen", "mouse",
          "printer", "network", "update", "user", "shell", "font", "theme", "clock"]


def test_a_study_with_bm25_reports_thresholds_with_a_guarantee(tmp_path, monkeypatch):
    pytest.importorskip("bm25s")
    from uncertank.experiment import run_study

    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    for split in ("train", "valid", "test"):
        lines = []
        for q, word in enumerate(_WORDS):
            lines.append(f"1\thow do I fix my {word} today\tcheck the {word} settings first")
            lines += [f"0\thow do I fix my {word} today\ttry the {_WORDS[(q + j) % 20]} tool {j}" for j in (1, 2, 3)]
        (tmp_path / "data" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    dataset = f"tsv:{tmp_path}/data/{{split}}.tsv"
    config = StudyConfig(
        name="conformal", train_dataset=dataset, train_negatives="file", n_candidates=4,
        conditions=(ConditionConfig("in-domain", dataset, "file"), ConditionConfig("again", dataset, "file")),
        rankers=(RankerConfig("bm25"),), risk_grid=(0.0,), nota=False, bayes=BayesConfig(enabled=False),
        conformal=ConformalConfig(alpha=0.2, alphas=(0.1, 0.2, 0.3)),
    )
    result = run_study(config, tmp_path / "out")
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["config"]["conformal"]["alpha"] == 0.2
    for ev, e in zip(document["evaluations"], result.evaluations, strict=True):
        c = ev["conformal"]
        assert c["n_calibration"] == 20 and c["n_test"] == 20 and c["score"] == "score"
        assert c["alpha"] == 0.2 and c["curve_alpha"] == [0.1, 0.2, 0.3] and 1.0 <= c["mean_size"] <= 4.0
        assert c["coverage_lower"] <= c["coverage"] <= c["coverage_upper"]
        assert c["exchangeable"]  # the same queries scored again
        assert (c["weighted_coverage"] is None) == (ev["condition"] == "in-domain")
        assert e.conformal is not None and e.conformal.coverage == c["coverage"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Thresholds with a guarantee" in md and "| `again` | `bm25` | score |" in md


def test_the_domain_classifier_recovers_a_known_likelihood_ratio():
    """Calibration features N(0, 1), test N(1, 1): the likelihood ratio is exp(x - 1/2)."""
    from uncertank.conformal import domain_weights
    from uncertank.experiment.guarantees import _DomainClassifier

    rng = np.random.default_rng(2)
    cal, test = rng.normal(size=(4000, 1)), rng.normal(loc=1.0, size=(4000, 1))
    weights = domain_weights(cal, test, classifier=_DomainClassifier())
    grid = np.array([[-1.0], [0.0], [1.0], [2.0]])
    fitted = _DomainClassifier().fit(np.vstack([cal, test]), np.repeat([0, 1], 4000)).predict_proba(grid)[:, 1]
    assert fitted / (1 - fitted) == pytest.approx(np.exp(grid[:, 0] - 0.5), rel=0.15)
    central = np.abs(cal[:, 0]) < 2.0  # the estimate is loosest in the tails, where few points lie
    assert weights.calibration[central] == pytest.approx(np.exp(cal[central, 0] - 0.5), rel=0.25)
