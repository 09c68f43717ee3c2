"""``uncertank run --dry-run``: the run's checks, what it would train, score and reuse, and a cost estimate.

Nothing is trained and no model is loaded: the tests make training and building a network fail them.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment import load_config
from uncertank.experiment import plan as P
from uncertank.experiment.runner import plan_study
from uncertank.progress import format_duration

pytest.importorskip("bm25s")

STUDY = """
[study]
train_dataset = "tsv:data/{split}.tsv"
train_negatives = "file"
n_candidates = 4
nota = false
metrics = ["map"]
recalibrators = []

[[conditions]]
name = "in-domain"
dataset = "tsv:data/{split}.tsv"
negatives = "file"

[[conditions]]
name = "embedded"
dataset = "tsv:data/{split}.tsv"
negatives = "embedding"

[[rankers]]
name = "bm25"
{more}
[bayes]
enabled = false
"""

_WORDS = ["disk", "mount", "kernel", "wifi", "driver", "sound", "grub", "boot", "apt", "python", "screen", "mouse"]


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    for split, n in (("train", 10), ("valid", 6), ("test", 8)):
        lines = []
        for q in range(n):
            lines.append(f"1\thow do I fix my {_WORDS[q]}\tcheck the {_WORDS[q]} settings")
            lines += [f"0\thow do I fix my {_WORDS[q]}\ttry the {_WORDS[(q + j) % 12]} tool" for j in (1, 2, 3)]
        (tmp_path / "data" / f"{split}.tsv").write_text("\n".join(lines) + "\n")

    def write(more: str = "", *, embedded: bool = True) -> str:
        text = STUDY.replace("{more}", more)
        if not embedded:
            text = text.replace('[[conditions]]\nname = "embedded"\ndataset = "tsv:data/{split}.tsv"\n'
                                'negatives = "embedding"\n', "")
        (tmp_path / "study.toml").write_text(text)
        return str(tmp_path / "study.toml")

    return write


@pytest.fixture
def no_work(monkeypatch):
    """Training, building a network and drawing embedding negatives fail the test."""
    from uncertank.datasets import sampling

    def refuse(*args, **kwargs):
        raise AssertionError("work done in a dry run")

    monkeypatch.setattr(sampling, "get_sampler", refuse, raising=False)
    try:
        from uncertank.nn.ranker import NeuralRanker
    except ImportError:
        return
    monkeypatch.setattr(NeuralRanker, "fit", refuse)
    monkeypatch.setattr(NeuralRanker, "build_model", refuse)


@pytest.fixture
def probed(monkeypatch):
    """The speed probe's measurement injected: fit at 2x the reference machine's (2.5x median), predict at 0.5x."""
    pytest.importorskip("torch")
    from uncertank.experiment.speed import REFERENCE_PROBE
    from uncertank.nn import probe

    train, predict = min(REFERENCE_PROBE.train), min(REFERENCE_PROBE.predict)
    calls = []

    def measured(*, repeats=3, device="cpu", seed=0):
        calls.append(device)
        return [train * 3, train * 2, train * 2.5], [predict * 0.5, predict * 0.5, predict * 0.5]

    monkeypatch.setattr(probe, "probe_backbone", measured)
    return calls


def test_a_dry_run_counts_the_data_and_estimates_the_steps(study, tmp_path, no_work, probed):
    pytest.importorskip("uncertank_bert")
    path = study('[[rankers]]\nname = "bert"\nparams = { device = "cpu" }\n')
    result = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  train        tsv:" + str(tmp_path) + "/data/{split}.tsv, file negatives: 10 queries, 40 pairs" in lines
    assert "  valid        tsv:" + str(tmp_path) + "/data/{split}.tsv, file negatives: 6 queries, 24 pairs" in lines
    assert any(line.startswith("  embedded ") and line.endswith("8 queries, 32 pairs (counted with random "
                                                                  "negatives: its sampler needs a model)")
               for line in lines)
    assert "  bert: bert; trains on 10 queries; scores 88 pairs" in lines
    fit = 2306.5 / 9539 / 4 * 2 * 10  # bert's rate per training query at max_length 128 (NeuralRanker.cost_rates)
    assert f"  fit bert: runs, about {2 * fit:.0f} s, up to {2.5 * fit:.0f} s (at the ranker's rate, calibrated; " \
           f"{fit:.0f} s on the reference machine)" in lines
    assert "  predict bert embedded: runs unless cached (its data is not built), about 0 s (at the " \
           "ranker's rate, calibrated; 0 s on the reference machine)" in lines
    assert "Speed probe: 0.0 s, one small batch of the packaged backbone trained and one scored; this machine " \
           "takes fit x2.00 (to 2.50), predict x0.50 (to 0.50) the reference machine's seconds: its fastest batch " \
           "to its median one. It scales the neural rankers' rates." in lines
    assert lines[-1].startswith("Estimated time: about ") and "2 CPU cores" in lines[-1]
    assert "(at the reference machine's rates: " in lines[-1]
    assert probed == ["cpu"]  # one probe, on the rankers' device
    assert not (tmp_path / "out").exists()  # nothing written


def test_the_probes_factors_scale_the_neural_rankers_rates(study, tmp_path, no_work, probed):
    """With the probe's measurement injected, each calibrated step is the reference estimate times its factor."""
    pytest.importorskip("uncertank_bert")
    config = load_config(study('[[rankers]]\nname = "bert"\nparams = { device = "cpu" }\n', embedded=False))
    reference = plan_study(config, tmp_path / "out", calibrate=False)
    assert probed == [] and reference.speed is None
    calibrated = plan_study(config, tmp_path / "out")
    assert calibrated.speed is not None and len(probed) == 1
    before = {s.name: s for s in reference.steps}
    for step in calibrated.steps:
        factor, high = (2.0, 2.5) if step.name.startswith("fit ") else (0.5, 0.5)
        if step.name.startswith("predict bm25"):  # not a neural ranker: its rates as they are
            assert step.seconds == before[step.name].seconds and step.reference_seconds is None
            continue
        assert step.reference_seconds == before[step.name].seconds
        assert step.seconds == pytest.approx(factor * before[step.name].seconds, rel=1e-12)
        assert step.high == pytest.approx(high * before[step.name].seconds, rel=1e-12)
    assert calibrated.reference_seconds == pytest.approx(reference.seconds)
    assert calibrated.seconds < calibrated.high_seconds
    assert calibrated.estimate_line().startswith(f"about {format_duration(calibrated.seconds)}, up to ")


def test_a_study_without_a_neural_ranker_runs_no_probe(study, tmp_path, monkeypatch):
    def refuse(**kwargs):
        raise AssertionError("probed")

    monkeypatch.setattr(P, "probe_machine", refuse)
    plan = plan_study(load_config(study(embedded=False)), tmp_path / "out")
    assert plan.speed is None and all(s.reference_seconds is None and s.high is None for s in plan.steps)
    assert "Speed probe:" not in plan.render() and "2 CPU cores" in plan.estimate_line()


def test_the_run_records_each_steps_estimate_beside_its_seconds(study, tmp_path):
    from uncertank.experiment import run_study

    out, said = tmp_path / "out", []
    estimates = {"predict bm25 valid": 42.0, "predict bm25 in-domain": 7.0}
    run_study(load_config(study(embedded=False)), out, log=said.append, estimates=estimates)
    steps = json.loads((out / "results.json").read_text())["steps"]
    assert steps["predict bm25 valid"]["estimated_seconds"] == 42.0
    assert steps["predict bm25 in-domain"]["estimated_seconds"] == 7.0
    assert steps["data"]["estimated_seconds"] is None
    assert any(line.startswith("bm25: scored 24 pairs (valid) in ") and line.endswith(" s (estimated 42 s)")
               for line in said), said
    run_study(load_config(study(embedded=False)), out, log=said.append, estimates=estimates)  # all reused
    steps = json.loads((out / "results.json").read_text())["steps"]
    assert steps["predict bm25 valid"]["resumed"] and steps["predict bm25 valid"]["estimated_seconds"] is None


def test_a_dry_run_after_a_run_shows_the_cached_steps_and_their_seconds(study, tmp_path):
    path = study(embedded=False)
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["run", path, "--out", str(out)]).exit_code == 0
    result = CliRunner().invoke(cli, ["run", path, "--out", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "  predict bm25 valid: cached, reused" in result.output.splitlines()
    assert result.output.splitlines()[-1] == "Estimated time: none; every step is cached and would be reused."
    result = CliRunner().invoke(cli, ["run", path, "--out", str(out), "--dry-run", "--no-resume"])
    seconds = json.loads((out / "results.json").read_text())["steps"]["predict bm25 in-domain"]["seconds"]
    assert f"  predict bm25 in-domain: runs, about {seconds:.0f} s (as the previous run)" in result.output.splitlines()


def test_a_dry_run_refuses_what_a_run_refuses_with_exit_2(study, tmp_path):
    path = study('[[rankers]]\nname = "bm25"\nlabel = "b"\nparams = { k9 = 1 }\n')
    result = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: {path}: rankers[1].params.k9: unknown parameter of 'bm25'; known: k1, b, method, stopwords"]


def test_a_dry_run_names_a_data_file_it_cannot_read(study, tmp_path):
    path = study()
    (tmp_path / "data" / "train.tsv").write_text("not a label\tq\ta\n")
    result = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: {path}: study.train_dataset: its train split cannot be loaded: {tmp_path}/data/train.tsv, line 1: "
        "the label must be an integer >= 0; got 'not a label'"]


def test_the_rankers_rates_are_those_of_the_real_run():
    """Each first-party ranker's ``cost_rates`` at the real run's setting is what the real run's records measured."""
    from pathlib import Path

    from uncertank import CostEstimating, make_ranker

    root = Path(__file__).resolve().parents[2] / "docs" / "results"
    run = json.loads((root / "real_run.json").read_text())
    ens = json.loads((root / "real_run_ensemble.json").read_text())
    conf = json.loads((root / "conformal_full.json").read_text())
    n_train = run["sizes"]["train"]
    pairs = run["sizes"]["test"]["in-domain"] * 10
    steps = run["step_seconds"]

    def rates(name, warm_start=True, **params):
        if name != "bm25":
            params.setdefault("max_length", 64)  # the real run's
        ranker = make_ranker(name, **params)
        assert isinstance(ranker, CostEstimating), name
        return ranker.cost_rates(warm_start=warm_start)

    # bert's training rate is the real run ensemble's four members (balanced pairs, as bert trains), per member
    member = ens["step_seconds"]["fit ensemble"] / ens["sizes"]["train"] / 4
    assert rates("bert", warm_start=False) == pytest.approx((member, steps["predict bert in-domain"] / pairs))
    for name in ("sngp", "gpf_bert", "pgdrr"):
        assert rates(name) == (steps[f"fit {name}"] / n_train, steps[f"predict {name} in-domain"] / pairs), name
    # mc_dropout shares bert's weights: started from it, it trains nothing; its scoring goes with the passes
    assert rates("mc_dropout", n_passes=10) == (0.0, steps["predict mc_dropout in-domain"] / pairs)
    half = steps["predict mc_dropout in-domain"] / pairs / 2
    assert rates("mc_dropout", n_passes=5).predict_per_pair == pytest.approx(half)
    assert rates("mc_dropout", warm_start=False).fit_per_query == pytest.approx(member)
    # the ensemble of five beside bert: four members trained; its fit and scoring go with the members
    assert rates("ensemble", n_members=5).fit_per_query == pytest.approx(
        ens["step_seconds"]["fit ensemble"] / ens["sizes"]["train"])
    one = rates("bert")
    assert rates("ensemble", n_members=3) == pytest.approx((2 * member, 3 * one.predict_per_pair))
    assert rates("ensemble", n_members=3, warm_start=False)[0] == pytest.approx(3 * member)
    # five members scored the in-domain pairs in 0.89 of five times bert's seconds: the rate is within 15%
    five = ens["step_seconds"]["predict ensemble in-domain"] / pairs
    assert rates("ensemble", n_members=5).predict_per_pair == pytest.approx(five, rel=0.15)
    (cs,) = [s["step_seconds"] for s in conf["studies"] if s["study"] == "docs/studies/conformal_full.toml"]
    laplace = (cs["fit laplace"] / n_train, cs["predict laplace in-domain"] / pairs)
    assert rates("laplace") == laplace
    # not started from a fitted ranker, it fine-tunes as bert does, then fits its posterior
    assert rates("laplace", warm_start=False) == pytest.approx((member + laplace[0], laplace[1]))
    assert rates("bm25", warm_start=False) == (0.0, steps["predict bm25 valid"] / (run["sizes"]["valid"] * 10))


def test_a_neural_rankers_training_rate_follows_its_pairs_epochs_and_length():
    """A training query costs its pairs (1 + train_ratio) every epoch; both rates scale with max_length."""
    from uncertank import make_ranker

    base = make_ranker("bert", max_length=64).cost_rates()
    lists = make_ranker("bert", train_ratio=9, epochs=2, max_length=128).cost_rates()
    assert lists.fit_per_query == pytest.approx(base.fit_per_query * 5 * 2 * 2)
    assert lists.predict_per_pair == pytest.approx(base.predict_per_pair * 2)
    assert make_ranker("bert", max_length=64, train_ratio=None).cost_rates().fit_per_query == pytest.approx(
        base.fit_per_query * 5)
    head = make_ranker("bert", max_length=64, freeze_encoder=True).cost_rates()
    assert head.fit_per_query == pytest.approx(2 * base.predict_per_pair)  # forward only, two pairs a query


def test_the_encoders_layers_scale_the_rates():
    from uncertank.experiment.config import RankerConfig
    from uncertank.experiment.plan import _layer_scale

    bert = RankerConfig("bert", {"num_hidden_layers": 3})
    by_label = {"bert": bert}
    assert _layer_scale(bert, by_label) == 0.5  # half the six layers the rates are given for
    assert _layer_scale(RankerConfig("mc_dropout", {"n_passes": 5}, init_from="bert"), by_label) == 0.5
    assert _layer_scale(RankerConfig("bert", {}), {}) == 1.0


def test_a_ranker_without_rates_has_no_estimate(study, tmp_path, monkeypatch):
    """A ranker that does not offer ``cost_rates`` (or returns None) gets no estimate rather than a guess."""
    from uncertank.baselines import BM25Ranker
    from uncertank.experiment import load_config

    with_rates = plan_study(load_config(study(embedded=False)), tmp_path / "out")
    assert all(s.seconds is not None for s in with_rates.steps if s.name.startswith("predict bm25"))
    monkeypatch.setattr(BM25Ranker, "cost_rates", lambda self, *, warm_start=False: None)
    plan = plan_study(load_config(study(embedded=False)), tmp_path / "out")
    scoring = [s for s in plan.steps if s.name.startswith("predict bm25")]
    assert scoring and all(s.seconds is None and s.source == "" for s in scoring)


def test_a_ranker_whose_rates_are_wrong_is_named_before_any_work(study, tmp_path, monkeypatch):
    from uncertank.baselines import BM25Ranker

    monkeypatch.setattr(BM25Ranker, "cost_rates", lambda self, *, warm_start=False: (0.0, 0.1))
    path = study(embedded=False)
    for extra in (["--dry-run"], []):
        result = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "out"), *extra])
        assert result.exit_code == 2, result.output
        assert result.output.splitlines()[-1] == (
            f"Error: {path}: rankers[0]: BM25Ranker.cost_rates(warm_start=False) must return None or "
            "uncertank.CostRates of two finite seconds >= 0; got (0.0, 0.1)")
    assert not (tmp_path / "out").exists()  # nothing written


def test_an_ensemble_of_neural_rankers_is_calibrated_too(study, tmp_path, no_work, probed):
    """The deep ensemble is no NeuralRanker, but its members are: its rates are the backbone's."""
    pytest.importorskip("uncertank_ensemble")
    config = load_config(study('[[rankers]]\nname = "ensemble"\nparams = { n_members = 2, device = "cpu" }\n',
                               embedded=False))
    plan = plan_study(config, tmp_path / "out")
    fit = next(s for s in plan.steps if s.name == "fit ensemble")
    assert fit.source == "at the ranker's rate, calibrated" and fit.seconds == pytest.approx(2 * fit.reference_seconds)
    assert len(probed) == 1


def test_the_bayes_stage_is_estimated_by_its_size():
    """Each fit a step, at the reference seconds scaled by steps x chains and, for the study's systems, by cells."""
    from dataclasses import replace

    from uncertank.experiment.config import BayesConfig, ComparisonSettings

    config = load_config(_demo_copy())
    plan = P.StudyPlan("s", None, [], [])
    P._plan_bayes(plan, config.section(ComparisonSettings), {}, {})
    steps = {s.name: s for s in plan.steps}
    scale = (config.bayes.draws + config.bayes.tune) * config.bayes.chains / 8000
    assert steps["bayes gaussian"].seconds == pytest.approx(P.BAYES_REFERENCE_SECONDS["gaussian"] * scale)
    assert steps["bayes zoib"].seconds == pytest.approx(P.BAYES_REFERENCE_SECONDS["zoib"] * scale)
    # the study's own rankers: one fit per family and condition, scaled by its systems x queries
    own = replace(config, bayes=BayesConfig(systems="study", families=("gaussian",), draws=500, tune=500, chains=2,
                                            sampler="nutpie",
                                            conditions=("in-domain",)))
    plan = P.StudyPlan("s", None, [], [])
    P._plan_bayes(plan, own.section(ComparisonSettings), {"in-domain": 100}, {})
    (step,) = plan.steps
    cells = len(config.rankers) * 100
    assert step.name == "bayes gaussian in-domain"
    assert step.seconds == pytest.approx(P.BAYES_REFERENCE_SECONDS["gaussian"] * 2000 / 8000 * cells / 1260)
    # a previous run's seconds win; PyMC's sampler was not measured: no estimate rather than a guess
    plan = P.StudyPlan("s", None, [], [])
    P._plan_bayes(plan, config.section(ComparisonSettings), {}, {"bayes gaussian": {"seconds": 12.5}})
    assert plan.steps[0].seconds == 12.5 and plan.steps[0].source == "as the previous run"
    plan = P.StudyPlan("s", None, [], [])
    pymc = replace(config, bayes=replace(config.bayes, sampler="pymc"))
    P._plan_bayes(plan, pymc.section(ComparisonSettings), {}, {})
    assert all(s.seconds is None for s in plan.steps)
    assert "bayes gaussian: runs unless cached, cost unknown (measured with nutpie only)" in plan.render()
    plan = P.StudyPlan("s", None, [], [])
    off = replace(config, bayes=replace(config.bayes, enabled=False))
    P._plan_bayes(plan, off.section(ComparisonSettings), {}, {})
    assert plan.steps == []


def _demo_copy():
    from uncertank.experiment import demo_study_path

    return demo_study_path("default")


def test_a_ranker_started_from_another_is_estimated_at_the_settings_it_takes_over():
    """The ensemble and mc_dropout run with bert's max_length (their warm start copies it): so do their rates."""
    from uncertank import make_ranker
    from uncertank.experiment.building import build_ranker
    from uncertank.experiment.config import RankerConfig

    bert = RankerConfig("bert", {"max_length": 64, "train_ratio": 1, "num_hidden_layers": 3})
    ens = RankerConfig("ensemble", {"n_members": 2}, init_from="bert")
    by_label = {"bert": bert, "ensemble": ens}
    started = P._as_started(ens, build_ranker(ens), by_label)
    one = make_ranker("bert", max_length=64).cost_rates()
    assert started.cost_estimating.cost_rates(warm_start=True) == pytest.approx(
        (one.fit_per_query, 2 * one.predict_per_pair))
    # built as written in the file it would run at the default max_length of 128: twice the cost
    alone = build_ranker(ens).cost_estimating.cost_rates(warm_start=True)
    assert alone.predict_per_pair == pytest.approx(2 * started.cost_estimating.cost_rates().predict_per_pair)
    # its own settings win; a ranker not started from another is used as built
    own = RankerConfig("ensemble", {"n_members": 2, "max_length": 32}, init_from="bert")
    assert P._as_started(own, build_ranker(own), {**by_label, "ensemble": own}).ranker.max_length == 32
    plain = build_ranker(bert)
    assert P._as_started(bert, plain, by_label) is plain


def test_a_dry_run_reads_past_sizes_a_previous_results_json_does_not_hold_as_counts(study, tmp_path):
    """A damaged ``sizes`` (a count as a string, ``test`` not a table) is no count to scale by, not a crash."""
    path = study(embedded=False)
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["run", path, "--out", str(out)]).exit_code == 0
    doc = json.loads((out / "results.json").read_text())
    doc["sizes"] = {"train": 10, "valid": "6", "test": ["in-domain"]}
    (out / "results.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["run", path, "--out", str(out), "--dry-run", "--no-resume"])
    assert result.exit_code == 0, result.output
    for step in ("predict bm25 valid", "predict bm25 in-domain"):
        seconds = doc["steps"][step]["seconds"]
        assert f"  {step}: runs, about {seconds:.0f} s (as the previous run)" in result.output.splitlines()
