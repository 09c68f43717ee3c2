"""The cost/calibration frontier of MC dropout in the top k layers (``mc_layers``), on the real run's model.

Takes the real run's fine-tuned cross-encoder ``bert`` (``--model``: the
checkpoint folder that ``docs/studies/real_run.toml`` saves to
``.cache/real_run/bert``), a random 200 of the Ubuntu sample's validation
and 600 of its test queries (the real run's sizes), and, for every k in
``--ks`` (0 = dropout in the head only, ``all`` = plain MC dropout), scores
the validation and test queries with ``MCDropoutRanker.from_ranker(bert,
n_passes=--passes, mc_layers=k)``; T = 5, 10 and 20 are the first T of those
passes. Per (k, T):

- cost: the network on one pre-encoded batch of 64 test pairs, as a ratio to
  ``bert`` timed right before it (median over ``--repeats`` rounds, the
  paired timing of ``benchmarks/bench_inference.py``);
- ECE over all test pairs and balanced (10 equal-width bins; the balanced
  ECE is the mean over ``--balanced-seeds`` random balanced subsamples, as
  one subsample's value moves with its seed by more than the settings
  differ), and the share of full MC dropout's (k = all, T = 10)
  balanced-ECE reduction over ``bert`` that the setting keeps, with a 95%
  interval of the reduction from a paired bootstrap over the test queries
  (``--bootstrap`` resamples);
- R_10@1 of the mean; risk-aware gain: test R_10@1 of the risk-aware ranking
  at the ``b`` chosen on validation R_10@1 (the study's grid) minus that of
  the mean;
- NOTA macro-F1 (random forest, stratified 5-fold), means only and means
  plus variances, with the paired t-test between them;

and ``bert``'s own row (dropout off). Everything goes to ``--out`` (JSON), the
frontier to ``--figure`` (PNG: cost ratio against the share kept, one line per
T) and a markdown table to stdout. The scores (``bert``'s, and the samples of
each split and k) are cached as .npy under ``--workdir`` (``.cache`` by
default), in ``mc_dropout_frontier/`` and a folder named by a digest of the
model's weights, each file keyed by everything it depends on (``step_inputs``:
the queries' content, the model folder's files, k, the passes scored, the
device, and the code: this script, uncertank's and the plugins'), so a rerun
resumes and a changed input or edited code scores again::

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study   # the model first (if not trained yet)
    python docs/scripts/mc_dropout_frontier.py
    python docs/scripts/mc_dropout_frontier.py --smoke       # the whole pipeline on a tiny random model
    python docs/scripts/mc_dropout_frontier.py --render docs/results/mc_dropout_frontier.json  # tables only

A real run also rewrites its section of benchmarks/RESULTS.md and prints the
table of docs/uncertainty.md (``--render`` does both from a results file).

``--smoke`` trains a 4-layer random BERT for a few steps on 30 toy queries
and runs everything into a temporary folder (under ``--workdir`` when
given).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import runpy
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
STUDY = "docs/studies/real_run.toml"  # trains and saves the model this script reads by default
TRAIN_COMMAND = f"uncertank run {STUDY} --out .cache/real_run/study"
MODEL = ROOT / ".cache" / "real_run" / "bert"  # where that study saves bert
VALID_QUERIES, TEST_QUERIES = 200, 600  # the real run's validation and test queries
# the tables and the figure, drawn from the JSON this script writes
_tables = runpy.run_path(str(Path(__file__).with_name("mc_dropout_frontier_tables.py")),
                         run_name="mc_dropout_frontier_tables")
docs_table, results_section = _tables["docs_table"], _tables["results_section"]
_table, _figure, _write_results_section = _tables["table"], _tables["figure"], _tables["write_results_section"]

PASSES = (5, 10, 20)
REFERENCE_T, TARGET_COST, TARGET_SHARE = _tables["REFERENCE_T"], _tables["TARGET_COST"], _tables["TARGET_SHARE"]


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    """``payload`` as indented JSON with sorted keys, written to a temporary file beside ``path`` and moved there."""
    from uncertank.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _atomic_npy(path: Path, array: Any) -> None:
    """``array`` saved as .npy to a temporary file beside ``path``, then moved there (``os.replace``)."""
    from uncertank.files import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # a handle: np.save would add .npy to a path
        np.save(fh, np.asarray(array))


def _subset(qs: Any, n: int | None, seed: int) -> Any:
    """A random ``n`` of the queries of ``qs`` in their order (all of them when ``n`` is None or not smaller)."""
    if n is None or n >= qs.n_queries:
        return qs
    idx = np.sort(np.random.default_rng(seed).choice(qs.n_queries, size=n, replace=False))
    return qs.subset(idx)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _model_folder(path: Path) -> Path:
    """``path`` if it holds a saved ranker; otherwise exit with how to train the real run's model."""
    if not (path / "uncertank.json").exists():
        raise SystemExit(
            f"the real run's model is not trained yet (no saved ranker in {path}); run "
            f"`{TRAIN_COMMAND}` first (it saves bert to {_shown(MODEL)}), or name a saved ranker with --model"
        )
    return path


def _describe(model: Path, digest: str) -> str:
    """The model a run scored, for its results file: the folder, what trained it, a digest of its weights."""
    trained = f" (bert of {STUDY})" if model.resolve() == MODEL.resolve() else ""
    return f"{_shown(model)}{trained}, weights SHA-256 {digest[:12]}"


def _parse_ks(text: str) -> list[int | None]:
    ks: list[int | None] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "all":
            ks.append(None)
        elif part.isdigit():
            ks.append(int(part))
        else:
            raise SystemExit(f"--ks must be a comma list of integers >= 0 and 'all'; got {text!r}")
    if not ks or len(set(ks)) != len(ks):
        raise SystemExit(f"--ks must name distinct values; got {text!r}")
    return ks


def _label(k: int | None) -> str:
    return "all" if k is None else str(k)


def _smoke_data(work: Path, n_valid: int, n_test: int) -> tuple[Any, Any, Path]:
    """Toy queries and a 4-layer random BERT trained for 24 steps on 30 of them, saved in ``work``/bert."""
    from uncertank import make_ranker
    from uncertank.nn import NeuralRanker
    from uncertank.nn.testing import tiny_config, toy_queries

    folder = work / "bert"
    if not (folder / "uncertank.json").exists():
        bert = make_ranker(
            "bert", backbone=tiny_config(num_hidden_layers=4), max_length=32, epochs=3, batch_size=8, lr=3e-3,
            show_progress=False, device="cpu",
        )
        assert isinstance(bert, NeuralRanker)  # the bert plugin's ranker is one
        bert.fit(toy_queries(30, seed=0))
        bert.save(folder)
    return toy_queries(n_valid, seed=1), toy_queries(n_test, seed=2), folder


def _cost_batch(bert: Any, test: Any, n_pairs: int) -> Any:
    """The first ``n_pairs`` test pairs, encoded by ``bert``'s tokenizer (as benchmarks/bench_inference.py)."""
    from uncertank.nn.inputs import EncodedPairs

    first = test.subset(np.arange(min(test.n_queries, -(-n_pairs // 10))))
    enc = bert.encode(first)
    n = min(n_pairs, enc.n_pairs)
    hi = enc.offsets[n]
    return EncodedPairs(enc.input_ids[:hi], enc.token_type_ids[:hi], enc.offsets[: n + 1], enc.pad_token_id)


def _paired_ratios(base: Any, fns: dict[Any, Any], repeats: int) -> tuple[dict[Any, float], dict[Any, float]]:
    """Median over ``repeats`` rounds of ``t(fn) / t(base)``, ``base`` timed right before each ``fn``; best times."""
    base()
    for fn in fns.values():
        fn()  # warm-up
    ratios: dict[Any, list[float]] = {k: [] for k in fns}
    best: dict[Any, float] = {"base": math.inf, **{k: math.inf for k in fns}}
    for _ in range(repeats):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            base()
            t1 = time.perf_counter()
            fn()
            t2 = time.perf_counter()
            best["base"] = min(best["base"], t1 - t0)
            best[key] = min(best[key], t2 - t1)
            ratios[key].append((t2 - t1) / (t1 - t0))
    return {k: float(np.median(v)) for k, v in ratios.items()}, best


def step_inputs(
    step: str, queries: Any, model_sha256: str, device: str, **mc_dropout: Any
) -> dict[str, Any]:
    """Everything the scores of one cached step depend on, what its key digests.

    ``step`` names it (``"bert"``: the model's own scores; ``"samples
    valid"``/``"samples test"``: MC dropout's), ``queries`` are the scored
    query set (by content, ``QuerySet.digest``), ``model_sha256`` the digest
    of the saved model's files, ``device`` where it runs (the CPU's fast
    dropout masks and a GPU's draw different passes), ``mc_dropout`` the
    parameters of ``MCDropoutRanker.from_ranker`` (``n_passes``,
    ``mc_layers``). The code: this script's source, and the study runner's
    key of each ranker's code (uncertank's version, its neural machinery,
    the plugin's version and source).
    """
    from uncertank.experiment import RankerConfig
    from uncertank.experiment.stages import unfitted_key
    from uncertank.files import file_digest

    code = {"script": file_digest(Path(__file__)), "bert": unfitted_key(RankerConfig(name="bert"))}
    if mc_dropout:
        code["mc_dropout"] = unfitted_key(RankerConfig(name="mc_dropout", params=mc_dropout))
    return {"step": step, "queries": queries.digest(), "model": model_sha256, "device": device,
            "params": mc_dropout, "code": code}


def cached_scores(folder: Path, stem: str, inputs: dict[str, Any], compute: Callable[[], Any]) -> Any:
    """The array of the step that ``inputs`` describe: the one a finished run saved, or ``compute()``'s, saved.

    The file is ``folder/<stem>-<key>.npy``, ``key`` the first 16 hex digits
    of ``uncertank.files.json_digest(inputs)``; beside it,
    ``<stem>-<key>.json`` records the inputs and the SHA-256 of the .npy's
    bytes. Both are written atomically, the record last: a file without its
    record (a run stopped between the two) or whose bytes differ from it is
    computed again, with a line saying so.
    """
    from uncertank.experiment.stages import digest
    from uncertank.files import file_digest, to_jsonable

    key = digest(inputs)
    path = folder / f"{stem}-{key}.npy"
    record = path.with_suffix(".json")
    if path.exists():
        try:
            recorded = json.loads(record.read_text(encoding="utf-8"))["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            recorded = None
        if recorded == file_digest(path):
            return np.load(path)
        print(f"{_shown(path)}: no record of its bytes, or other bytes than recorded; computed again", flush=True)
    t0 = time.perf_counter()
    array = np.asarray(compute())
    seconds = time.perf_counter() - t0
    _atomic_npy(path, array)
    _atomic_json(record, {"key": key, "inputs": to_jsonable(inputs), "sha256": file_digest(path),
                          "seconds": round(seconds, 1), "shape": list(array.shape)})
    return array


def _samples(
    folder: Path, split: str, queries: Any, k: int | None, passes: int, bert: Any, model_sha256: str, device: str
) -> Any:
    """(passes, n_pairs) samples of ``split`` under ``mc_layers=k``: read from the cache, or scored and saved."""
    from uncertank_mcdropout import MCDropoutRanker

    def score() -> Any:
        t0 = time.perf_counter()
        samples = MCDropoutRanker.from_ranker(bert, n_passes=passes, mc_layers=k).predict_samples(queries).samples
        print(f"{split}, k = {_label(k)}: {passes} passes over {queries.n_pairs} pairs in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        return samples

    inputs = step_inputs(f"samples {split}", queries, model_sha256, device, n_passes=passes, mc_layers=k)
    return cached_scores(folder, f"{split}_q{queries.n_queries}_k{_label(k)}_T{passes}", inputs, score)


def balanced_eces(scores: Any, labels: Any, seeds: Any) -> Any:
    """The balanced ECE (10 equal-width bins) on the balanced subsample of each seed."""
    from uncertank.metrics import expected_calibration_error

    return np.array([
        expected_calibration_error(scores, labels, n_bins=10, strategy="uniform", balanced=True, seed=int(seed))
        for seed in seeds
    ])


def _calibration(ranked: Any, n_seeds: int) -> dict[str, float]:
    from uncertank.metrics import expected_calibration_error, recall_at_k

    balanced = balanced_eces(ranked.scores, ranked.labels, range(n_seeds))
    return {
        "ECE": float(expected_calibration_error(ranked.scores, ranked.labels, n_bins=10, strategy="uniform")),
        "ECE_balanced_seed0": float(balanced[0]),
        "ECE_balanced": float(balanced.mean()),
        "ECE_balanced_seed_sd": float(balanced.std(ddof=1)) if n_seeds > 1 else 0.0,
        "R10@1": float(recall_at_k(ranked, k=1)),
    }


def balanced_ece_reduction_interval(
    test: Any, bert_scores: Any, scores: Any, n_resamples: int, n_seeds: int = 10, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of bert's balanced ECE minus the setting's, over queries resampled with replacement.

    Paired (``uncertank.stats.query_bootstrap_interval``): replicate ``b``
    draws the same queries for both and averages each one's balanced ECE
    over the same ``n_seeds`` subsamples (seeds ``b * n_seeds`` onwards: the
    same non-relevant pairs kept for both), so the interval covers both the
    queries and the balanced subsamples.
    """
    from uncertank.stats import query_bootstrap_interval

    def reduction(pos: Any, b: int) -> float:
        y, seeds = test.labels[pos], range(b * n_seeds, (b + 1) * n_seeds)
        return float((balanced_eces(bert_scores[pos], y, seeds) - balanced_eces(scores[pos], y, seeds)).mean())

    return query_bootstrap_interval(test.offsets, reduction, n_resamples=n_resamples, level=level, seed=0)


def _row(
    valid: Any, test: Any, valid_samples: Any, test_samples: Any, grid: Any, trees: int, n_seeds: int
) -> dict[str, Any]:
    """Every number of one (k, T): calibration, R_10@1, risk-aware gain, NOTA F1."""
    from uncertank import PredictiveSamples
    from uncertank.metrics import recall_at_k
    from uncertank.uncertainty import compare_nota, make_nota_task, risk_aware_rerank, select_risk_aversion

    def r1(r: Any) -> float:
        return float(recall_at_k(r, k=1))

    vs = PredictiveSamples(valid_samples, valid.offsets, ranker="mc_dropout")
    ts = PredictiveSamples(test_samples, test.offsets, ranker="mc_dropout")
    ranked = test.ranked(ts.mean())
    row = _calibration(ranked, n_seeds)
    sel = select_risk_aversion(vs, valid.labels, r1, grid=grid)
    risk_r1 = r1(test.ranked(risk_aware_rerank(ts, b=sel.b)))
    row.update({"risk_b": sel.b, "R10@1_risk_aware": risk_r1, "risk_aware_gain": risk_r1 - row["R10@1"]})
    cmp = compare_nota(make_nota_task(ranked, ts.var(), seed=0), n_estimators=trees, seed=0)
    row.update({
        "NOTA_F1_means": cmp.means_only.f1_mean, "NOTA_F1_with_variance": cmp.with_variance.f1_mean,
        "NOTA_F1_with_variance_std": cmp.with_variance.f1_std,
        "NOTA_p_value": None if math.isnan(cmp.p_value) else cmp.p_value,  # type: ignore[dict-item]
        "mean_predictive_std": float(test_samples.std(0).mean()),
    })
    return row


def _recost(args: argparse.Namespace) -> dict[str, Any]:
    """The cost column of ``args.recost`` measured again; the calibration columns, computed from samples, kept."""
    import platform

    import torch
    from uncertank_mcdropout import MCDropoutRanker

    import uncertank.datasets as ud
    from uncertank.files import file_digest
    from uncertank.nn import NeuralRanker, get_accelerator, load_ranker, score_probabilities

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    member = _model_folder(args.model)
    payload = json.loads(args.recost.read_text(encoding="utf-8"))
    settings = payload["settings"]
    test = _subset(ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0),
                   payload["data"]["test_queries"], 2)
    digest = file_digest(member / "model.safetensors")
    bert = load_ranker(member, show_progress=False)
    assert isinstance(bert, NeuralRanker), type(bert)
    model: Any = bert.build_model()  # a plugin's torch module: its submodules are read by name
    n_layers = len(model.encoder.encoder.layer)
    batch = _cost_batch(bert, test, int(settings["cost_pairs"]))
    acc = get_accelerator(bert.device)
    rows = payload["frontier"]
    configs = sorted({(r["mc_layers"], int(r["T"])) for r in rows}, key=lambda c: (c[0] is None, c[0] or 0, c[1]))
    rankers = {k: MCDropoutRanker.from_ranker(bert, n_passes=max(t for _, t in configs), mc_layers=k)
               for k, _ in configs}

    def timed(k: int | None, t: int) -> Any:
        return lambda: rankers[k].score_top_layers(batch, n_passes=t, mc_layers=n_layers if k is None else k)

    load_before = os.getloadavg()
    ratios, best = _paired_ratios(
        lambda: score_probabilities([model], batch, batch_size=batch.n_pairs, accelerator=acc),
        {c: timed(*c) for c in configs}, args.repeats,
    )
    load_after = os.getloadavg()
    for r in rows:
        c = (r["mc_layers"], int(r["T"]))
        r["cost_ratio"], r["s_per_1000_pairs_best"] = ratios[c], best[c] / batch.n_pairs * 1000
    target = payload["target"]
    target["met_by"] = [
        {"k": r["k"], "T": r["T"], "cost_ratio": r["cost_ratio"], "share": r["share_of_full_ece_reduction"]}
        for r in rows if target["share_defined"] and r["cost_ratio"] <= target["cost_at_most"]
        and r["share_of_full_ece_reduction"] >= target["share_at_least"]
    ]
    payload["cost_remeasured"] = {
        "command": "python docs/scripts/mc_dropout_frontier.py --recost " + str(args.recost),
        # the same architecture and batch: the cost does not depend on the weights
        "weights": _describe(member, digest), "model": _shown(member), "model_sha256": digest,
        "repeats": args.repeats, "load_average": {"before_timing": list(load_before), "after_timing": list(load_after)},
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()},
        "cost_mean_tokens": float(batch.lengths.mean()),
    }
    _atomic_json(args.recost, payload)
    share_defined = bool(target["share_defined"])
    _figure(rows, share_defined, args.figure or args.recost.with_suffix(".png"),
            f"mc_layers: cost against calibration kept\n{payload['source']}\n"
            f"{payload['data']['test_queries']} test and {payload['data']['valid_queries']} validation queries")
    _write_results_section(payload)
    print(_table(payload["bert"], rows))
    print(docs_table(payload))
    return payload


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the measurement; return the JSON payload it writes to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test-queries", type=int, default=None, help=f"the real run's ({TEST_QUERIES}) by default")
    ap.add_argument("--valid-queries", type=int, default=None, help=f"the real run's ({VALID_QUERIES}) by default")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of paired timings")
    ap.add_argument("--ks", default="0,1,2,3,all", help="mc_layers values: integers >= 0 and 'all'")
    ap.add_argument("--passes", type=int, default=max(PASSES), help="T scored per k (the largest T)")
    ap.add_argument("--cost-pairs", type=int, default=64, help="pairs in the timed batch")
    ap.add_argument("--nota-trees", type=int, default=100, help="trees of the NOTA random forest")
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="query resamples of the balanced-ECE reduction's 95%% interval")
    ap.add_argument("--balanced-seeds", type=int, default=100,
                    help="balanced subsamples the balanced ECE is averaged over (10 per bootstrap resample)")
    ap.add_argument("--model", type=Path, default=MODEL,
                    help=f"the saved bert to measure ({_shown(MODEL)}, where {STUDY} saves it, by default)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the samples are cached, under mc_dropout_frontier/ (.cache by default); with "
                         "--smoke, where the temporary folder goes")
    ap.add_argument("--out", type=Path, default=None, help="docs/results/mc_dropout_frontier.json")
    ap.add_argument("--figure", type=Path, default=None, help="docs/results/mc_dropout_frontier.png")
    ap.add_argument("--smoke", action="store_true", help="a tiny random model on toy queries, in a temporary folder")
    ap.add_argument("--render", type=Path, default=None, metavar="JSON",
                    help="measure nothing: print the docs table of a results file and rewrite its RESULTS.md section")
    ap.add_argument("--recost", type=Path, default=None, metavar="JSON",
                    help="re-measure the cost column of a results file on --model (same batch, "
                         "same paired timing), keep every calibration column, rewrite the file and its tables")
    args = ap.parse_args(argv)
    if args.recost is not None:
        return _recost(args)
    if args.render is not None:
        payload = json.loads(args.render.read_text(encoding="utf-8"))
        _write_results_section(payload)
        print(docs_table(payload))
        return payload
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ks = _parse_ks(args.ks)
    if min(args.passes, args.repeats, args.cost_pairs, args.nota_trees, args.bootstrap, args.balanced_seeds) < 1:
        raise SystemExit("--passes, --repeats, --cost-pairs, --nota-trees, --bootstrap and --balanced-seeds "
                         "must be >= 1")
    passes = sorted({t for t in PASSES if t <= args.passes} | {args.passes})
    ref_t = REFERENCE_T if REFERENCE_T in passes else max(passes)

    import torch

    import uncertank.datasets as ud
    from uncertank.experiment import StudyConfig
    from uncertank.files import file_digest, folder_digest
    from uncertank.nn import NeuralRanker, get_accelerator, load_ranker, score_probabilities
    from uncertank.uncertainty import evaluate_nota, make_nota_task

    n_valid = args.valid_queries or (20 if args.smoke else VALID_QUERIES)
    n_test = args.test_queries or (20 if args.smoke else TEST_QUERIES)
    if args.smoke:
        torch.set_num_threads(1)  # a tiny model: fewer threads, less jitter in its millisecond timings
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="mc_dropout_frontier_", dir=args.workdir))
        valid, test, member = _smoke_data(work, n_valid, n_test)
    else:
        member = _model_folder(args.model)
        work = args.workdir or ROOT / ".cache"
        data = {split: ud.load("ubuntu-sample", split=split, negatives="bm25", n_candidates=10, seed=0)
                for split in ("valid", "test")}
        valid, test = _subset(data["valid"], n_valid, 1), _subset(data["test"], n_test, 2)
    results = work if args.smoke else ROOT / "docs" / "results"
    out = args.out or results / "mc_dropout_frontier.json"
    figure = args.figure or results / "mc_dropout_frontier.png"
    # A folder per weights' digest; in it, each file keyed by the model's files and every other input.
    digest = file_digest(member / "model.safetensors")
    model_files = folder_digest(member)
    cache = work / "mc_dropout_frontier" / digest[:12]
    source = ("smoke: a 4-layer random BERT trained for 24 steps on 30 toy queries" if args.smoke
              else _describe(member, digest))
    cache.mkdir(parents=True, exist_ok=True)

    bert = load_ranker(member, show_progress=False)  # no bars inside the timed calls
    assert isinstance(bert, NeuralRanker), type(bert)
    model: Any = bert.build_model()  # a plugin's torch module: its submodules are read by name
    n_layers = len(model.encoder.encoder.layer)
    bad = [k for k in ks if k is not None and k > n_layers]
    if bad:
        raise SystemExit(f"--ks: the model has {n_layers} encoder layers; got {', '.join(map(str, bad))}")
    grid = StudyConfig.__pydantic_fields__["risk_grid"].default  # type: ignore[attr-defined]
    acc = get_accelerator(bert.device)
    device = acc.device.type

    # bert's own row: dropout off, means only.
    bert_scores = cached_scores(cache, f"test_q{test.n_queries}_bert", step_inputs("bert", test, model_files, device),
                                lambda: bert.predict(test).scores)
    ranked = test.ranked(bert_scores)
    bert_row: dict[str, Any] = {"k": "none", "T": 1, "cost_ratio": 1.0, **_calibration(ranked, args.balanced_seeds)}
    bert_row["NOTA_F1_means"] = evaluate_nota(make_nota_task(ranked, None, seed=0), n_estimators=args.nota_trees,
                                              seed=0).f1_mean

    samples = {
        (split, k): _samples(cache, split, qs, k, args.passes, bert, model_files, device)
        for k in ks for split, qs in (("valid", valid), ("test", test))
    }

    # Cost: the networks side by side on one pre-encoded batch.
    from uncertank_mcdropout import MCDropoutRanker

    batch = _cost_batch(bert, test, args.cost_pairs)
    rankers = {k: MCDropoutRanker.from_ranker(bert, n_passes=args.passes, mc_layers=k) for k in ks}

    def timed(k: int | None, t: int) -> Any:
        mc, layers = rankers[k], n_layers if k is None else k
        return lambda: mc.score_top_layers(batch, n_passes=t, mc_layers=layers)

    load_before = os.getloadavg()
    ratios, best = _paired_ratios(
        lambda: score_probabilities([model], batch, batch_size=batch.n_pairs, accelerator=acc),
        {(k, t): timed(k, t) for k in ks for t in passes},
        args.repeats,
    )
    load_after = os.getloadavg()

    rows: list[dict[str, Any]] = []
    for k in ks:
        for t in passes:
            row = {"k": _label(k), "mc_layers": k, "T": t, "cost_ratio": ratios[(k, t)],
                   "s_per_1000_pairs_best": best[(k, t)] / batch.n_pairs * 1000}
            row.update(_row(valid, test, samples[("valid", k)][:t], samples[("test", k)][:t], grid, args.nota_trees,
                            args.balanced_seeds))
            row["ece_balanced_reduction_ci95"] = list(balanced_ece_reduction_interval(
                test, bert_scores, samples[("test", k)][:t].mean(0), args.bootstrap,
                n_seeds=min(10, args.balanced_seeds)))
            rows.append(row)
    ref = next((r for r in rows if r["k"] == "all" and r["T"] == ref_t), None)
    full = None if ref is None else bert_row["ECE_balanced"] - ref["ECE_balanced"]
    # The reference's own Monte Carlo noise: the same reduction from the next, disjoint ref_t passes.
    second_draw = None
    if ref is not None and args.passes >= 2 * ref_t:
        other = samples[("test", None)][ref_t:2 * ref_t].mean(0)
        second_draw = bert_row["ECE_balanced"] - float(
            balanced_eces(other, test.labels, range(args.balanced_seeds)).mean())
    share_defined = full is not None and full > 0
    for r in rows:
        r["ece_balanced_reduction"] = bert_row["ECE_balanced"] - r["ECE_balanced"]
        r["share_of_full_ece_reduction"] = r["ece_balanced_reduction"] / full if share_defined else None
        r["share_ci95"] = [c / full for c in r["ece_balanced_reduction_ci95"]] if share_defined else None
    met = [
        {"k": r["k"], "T": r["T"], "cost_ratio": r["cost_ratio"], "share": r["share_of_full_ece_reduction"]}
        for r in rows
        if share_defined and r["cost_ratio"] <= TARGET_COST and r["share_of_full_ece_reduction"] >= TARGET_SHARE
    ]
    _figure(rows, share_defined, figure,
            f"mc_layers: cost against calibration kept\n{source}\n"
            f"{test.n_queries} test and {valid.n_queries} validation queries")

    cli = list(sys.argv[1:] if argv is None else argv)
    payload = {
        "command": " ".join(["python docs/scripts/mc_dropout_frontier.py", *map(shlex.quote, cli)]),
        "source": source,
        "settings": {
            "ks": [_label(k) for k in ks], "passes": passes, "scored_passes": args.passes,
            "n_layers": n_layers, "reference": {"k": "all", "T": ref_t},
            "max_length": bert.training_config.max_length, "cost_pairs": batch.n_pairs,
            "cost_mean_tokens": float(batch.lengths.mean()), "repeats": args.repeats,
            "risk_grid": list(grid), "nota_trees": args.nota_trees,
            "model": _shown(member), "model_sha256": digest,
            "study": STUDY if member.resolve() == MODEL.resolve() else None,
            "work_folder": _shown(work), "samples_folder": _shown(cache),
            "ece": "10 equal-width bins on [0, 1]; ECE over all test pairs; a balanced subsample keeps as many "
            "non-relevant as relevant pairs: ECE_balanced is the mean over balanced_seeds subsamples (seeds 0, "
            "1, ...), ECE_balanced_seed_sd their standard deviation, ECE_balanced_seed0 the first",
            "balanced_seeds": args.balanced_seeds,
            "cost": "median over rounds of t(configuration) / t(bert) on one pre-encoded batch, bert timed "
            "right before each configuration; s_per_1000_pairs_best is the best round",
            "risk": "b chosen on validation R_10@1 over risk_grid (ties: closest to 0); gain = test R_10@1 "
            "of the risk-aware ranking minus that of the mean",
            "nota": "random forest, stratified 5-fold, macro-F1; task seed 0",
            "bootstrap": args.bootstrap,
            "ece_balanced_reduction_ci95": "2.5% and 97.5% quantiles of bert's balanced ECE minus the "
            "setting's over --bootstrap resamples of the test queries (with replacement, paired: the same "
            "queries and the same 10 balanced subsamples for both, each replicate's balanced ECE their mean)",
        },
        "data": {"valid_queries": valid.n_queries, "test_queries": test.n_queries, "test_pairs": test.n_pairs},
        "machine": {
            "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(acc.device),
        },
        "load_average": {"before_timing": list(load_before), "after_timing": list(load_after)},
        "bert": bert_row,
        "frontier": rows,
        "target": {
            "cost_at_most": TARGET_COST, "share_at_least": TARGET_SHARE, "reference_reduction": full,
            "reference_reduction_second_draw": second_draw,
            "share_defined": share_defined, "met_by": met,
        },
    }
    _atomic_json(out, payload)
    if not args.smoke:
        _write_results_section(payload)
    print(_table(bert_row, rows))
    if not share_defined:
        print(f"\nFull MC dropout (k = all, T = {ref_t}) does not reduce bert's balanced ECE here: no share.")
    else:
        print(f"\nSettings at <= {TARGET_COST}x bert keeping >= {TARGET_SHARE:.0%} of the reduction: "
              + (", ".join(f"k={m['k']}, T={m['T']}" for m in met) or "none"))
    print(f"\nJSON: {out}\nfigure: {figure}", flush=True)
    return payload


if __name__ == "__main__":
    main()
