"""A study, described in TOML and validated into dataclasses.

A study trains rankers on one dataset and evaluates them under several
conditions (in-domain, cross-negative-sampling, cross-domain), then reports
effectiveness, calibration, risk-aware reranking, NOTA prediction and,
optionally, a Bayesian comparison of systems. See ``docs/experiments.md``
for the file format; :func:`demo_config` is the bundled default.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field, fields
from os import PathLike
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "BayesConfig",
    "ConditionConfig",
    "RankerConfig",
    "StudyConfig",
    "demo_config",
    "load_config",
]

Size = Literal["quick", "default", "full"]


@dataclass(frozen=True)
class ConditionConfig:
    """One evaluation condition: a dataset's test split under one negative sampler."""

    name: str
    dataset: str
    negatives: str = "bm25"


@dataclass(frozen=True)
class RankerConfig:
    """One ranker: a registered name, its parameters, and a report label.

    Attributes
    ----------
    name : str
        A registered ranker (``uncertank plugins --kind rankers``).
    params : dict
        Keyword arguments of the ranker's factory.
    label : str
        Report name; ``name`` by default.
    init_from : str, optional
        The label of an earlier ranker of the study whose trained weights this
        one starts from: its factory's ``from_ranker(trained, **params)``
        builds it (``mc_dropout`` from ``bert`` is Penha & Hauff's S-BERT^D;
        an ``ensemble`` from ``bert`` keeps it as member 0 and trains the
        others; any :class:`uncertank.nn.NeuralRanker`, e.g. ``sngp``, gets a
        new head on a copy of the trained encoder and is then trained). The
        runner calls ``fit`` on the result only when its ``is_fitted`` is
        False.
    checkpoint : str, optional
        A folder written by the ranker's ``save`` (e.g. a model fine-tuned
        elsewhere): the study loads it with the class's ``load(folder,
        **params)`` instead of training, so ``params`` are load-time
        overrides (``n_passes``, ``eval_batch_size``...). Its cache key is a
        digest of the folder's files, so a changed checkpoint recomputes
        every step that depends on it. A relative path in a study file is
        taken relative to that file. Not together with ``init_from``.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    init_from: str | None = None
    checkpoint: str | None = None

    @property
    def key(self) -> str:
        """The name used in reports and cache paths."""
        return self.label or self.name


@dataclass(frozen=True)
class BayesConfig:
    """The Bayesian comparison of the bundled TREC-COVID round 1 systems."""

    enabled: bool = True
    families: tuple[str, ...] = ("gaussian", "zoib")
    draws: int = 500
    tune: int = 500
    chains: int = 2
    sampler: str = "pymc"
    drop_bottom: float = 0.0
    baseline: str | None = None


@dataclass(frozen=True)
class StudyConfig:
    """Everything a study needs.

    Attributes
    ----------
    name : str
        Report title.
    train_dataset, train_negatives : str
        Where the rankers are trained (its ``train`` and ``valid`` splits).
    conditions : tuple of ConditionConfig
        Test conditions; the first is taken as in-domain.
    rankers : tuple of RankerConfig
        Rankers to train and evaluate.
    n_candidates : int
        Candidates per query (1 relevant + negatives).
    max_train_queries, max_valid_queries, max_test_queries : int or None
        Seeded random subsets keep a study's cost bounded; None keeps all.
    max_context_turns : int or None
        Keep only the most recent utterances of each context.
    n_bins : int
        Bins of the ECE and reliability diagrams.
    risk_grid : tuple of float
        Values of the risk aversion ``b`` tried on validation data.
    nota : bool
        Run NOTA prediction on the in-domain condition.
    metrics : tuple
        Metric entries resolved through the metrics registry
        (:func:`uncertank.metrics.resolve_metrics`): a name (``"map"``) or a
        table with its options (``{name = "recall_at_k", k = 1}``); by
        default :data:`uncertank.metrics.DEFAULT_STUDY_METRICS`. A plugin's
        metric named here appears in every table of the report.
    recalibrators : tuple of str
        Registered recalibrators fitted on each probabilistic ranker's
        validation predictions and reported beside the raw scores; by default
        every registered one.
    bayes : BayesConfig
        The TREC-COVID comparison.
    seed : int
        Seeds data subsets, training and sampling.
    """

    name: str
    train_dataset: str
    conditions: tuple[ConditionConfig, ...]
    rankers: tuple[RankerConfig, ...]
    train_negatives: str = "bm25"
    n_candidates: int = 10
    max_train_queries: int | None = None
    max_valid_queries: int | None = None
    max_test_queries: int | None = None
    max_context_turns: int | None = None
    n_bins: int = 10
    risk_grid: tuple[float, ...] = (-0.5, -0.2, -0.1, 0.0, 0.1, 0.2, 0.5)
    nota: bool = True
    metrics: tuple[Any, ...] | None = None
    recalibrators: tuple[str, ...] | None = None
    bayes: BayesConfig = field(default_factory=BayesConfig)
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.conditions:
            raise ValueError("conditions must hold at least one condition; got none")
        if not self.rankers:
            raise ValueError("rankers must hold at least one ranker; got none")
        keys = [r.key for r in self.rankers]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"rankers must have distinct labels; {', '.join(dup)} appear twice (set label=)")
        names = [c.name for c in self.conditions]
        dup = sorted({k for k in names if names.count(k) > 1})
        if dup:
            raise ValueError(f"conditions must have distinct names; {', '.join(dup)} appear twice")
        if self.n_candidates < 2:
            raise ValueError(f"n_candidates must be >= 2; got {self.n_candidates}")
        if self.n_bins < 1:
            raise ValueError(f"n_bins must be >= 1; got {self.n_bins}")
        seen: set[str] = set()
        for r in self.rankers:
            if r.init_from is not None and r.init_from not in seen:
                raise ValueError(
                    f"ranker {r.key!r}: init_from must name an earlier ranker's label; got {r.init_from!r} "
                    f"(earlier: {', '.join(sorted(seen)) or 'none'})"
                )
            if r.init_from is not None and r.checkpoint is not None:
                raise ValueError(
                    f"ranker {r.key!r}: give init_from or checkpoint, not both "
                    f"(got init_from={r.init_from!r}, checkpoint={r.checkpoint!r})"
                )
            seen.add(r.key)


_SIZES: dict[str, dict[str, Any]] = {
    # MiniLM layers kept, pooling, input tokens, pairs per step, peak learning rate, epochs,
    # ensemble members, MC passes, query caps (train / valid / test per condition), MCMC draws
    # (= tuning steps) and chains. docs/experiments.md records the measurements that chose the default.
    "quick": {"layers": 1, "pooling": "mean", "max_length": 48, "batch_size": 16, "lr": 2e-4, "epochs": 1,
              "members": 2, "passes": 5, "train": 300, "valid": 40, "test": 40, "draws": 300, "chains": 2,
              "freeze": True},
    "default": {"layers": 3, "pooling": "mean", "max_length": 64, "batch_size": 16, "lr": 2e-4, "epochs": 1,
                "members": 3, "passes": 10, "train": 3000, "valid": 50, "test": 100, "draws": 1000,
                "chains": 4, "freeze": True},
    # Penha & Hauff's network: [CLS] pooling, the whole encoder
    "full": {"layers": None, "pooling": "cls", "max_length": 64, "batch_size": 16, "lr": 1e-4, "epochs": 1,
             "members": 5, "passes": 10, "train": None, "valid": 200, "test": 600, "draws": 2000, "chains": 4,
             "freeze": False},
}

# GP rankers join the study when their plugins are installed: a GP head on a copy of bert's
# fine-tuned encoder, then trained like bert (the packaged MiniLM's own pooled vector carries no
# relevance signal at the start, and a GP head on it does not learn in one short epoch).
_GP_RANKERS = ("sngp", "gpf_bert", "pgdrr")


def demo_config(size: Size = "default") -> StudyConfig:
    """The bundled study on real data.

    Ubuntu (sample) with BM25 negatives for training; test conditions:
    in-domain (BM25 negatives), cross-negative-sampling (random, and
    embedding when the packaged MiniLM is installed), cross-domain (chitchat,
    BM25 negatives, when the ``chitchat-dataset`` package is installed).
    Rankers: the BM25 baseline and, when the neural plugins and the packaged
    MiniLM are installed, ``bert`` fine-tuned from MiniLM, ``mc_dropout``
    with ``bert``'s weights (Penha & Hauff's S-BERT^D), ``ensemble`` with
    ``bert`` as member 0, and ``sngp``, ``gpf_bert``, ``pgdrr`` when their
    plugins are installed.

    Parameters
    ----------
    size : {"quick", "default", "full"}
        ``quick``: a smoke run (one MiniLM layer, a few hundred queries; it
        checks that everything runs, its numbers are not evidence).
        ``default``: three MiniLM layers, mean-pooled, fine-tuned on 3,000
        queries, under 15 minutes on two CPU cores with every neural ranker
        clearly trained. ``full``: Penha & Hauff's setting on the whole
        sample (all six layers, M = 5, T = 10); hours on a CPU.
    """
    from uncertank._validation import check_choice
    from uncertank.plugins import registry

    s = _SIZES[check_choice(size, "size", tuple(_SIZES))]
    rankers: list[RankerConfig] = [RankerConfig("bm25")]
    available = registry("rankers")
    from uncertank.datasets import packaged_model_path

    backbone = packaged_model_path()
    if backbone is not None and "bert" in available:
        neural: dict[str, Any] = {
            "backbone": backbone,
            "max_length": s["max_length"],
            "epochs": s["epochs"],
            "lr": s["lr"],
            "batch_size": s["batch_size"],
            "pooling": s["pooling"],
            "seed": 0,
            "show_progress": False,
            "freeze_embeddings": s["freeze"],
        }
        if s["layers"] is not None:
            neural["num_hidden_layers"] = s["layers"]
        rankers.append(RankerConfig("bert", neural))
        if "mc_dropout" in available:
            rankers.append(RankerConfig("mc_dropout", {"n_passes": s["passes"]}, init_from="bert"))
        if "ensemble" in available:
            rankers.append(RankerConfig("ensemble", {"n_members": s["members"]}, init_from="bert"))
        for name in _GP_RANKERS:
            if name in available:
                rankers.append(RankerConfig(name, dict(neural), init_from="bert"))
    conditions = [
        ConditionConfig("in-domain", "ubuntu-sample", "bm25"),
        ConditionConfig("cross-NS random", "ubuntu-sample", "random"),
    ]
    if backbone is not None:
        conditions.append(ConditionConfig("cross-NS embedding", "ubuntu-sample", "embedding"))
    if "chitchat" in registry("datasets") and importlib.util.find_spec("chitchat_dataset") is not None:
        conditions.append(ConditionConfig("cross-domain chitchat", "chitchat", "bm25"))
    return StudyConfig(
        name=f"uncertank demo ({size})",
        train_dataset="ubuntu-sample",
        train_negatives="bm25",
        conditions=tuple(conditions),
        rankers=tuple(rankers),
        max_train_queries=s["train"],
        max_valid_queries=s["valid"],
        max_test_queries=s["test"],
        risk_grid=(-0.5, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.5),
        bayes=BayesConfig(
            draws=s["draws"], tune=s["draws"], chains=s["chains"],
            # nutpie samples these models 2-3x faster than PyMC's NUTS (benchmarks/RESULTS.md)
            sampler="nutpie" if importlib.util.find_spec("nutpie") is not None else "pymc",
        ),
    )


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from None


def _only_known(section: str, data: dict[str, Any], cls: type) -> dict[str, Any]:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"[{section}] has unknown keys {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return data


def _with_checkpoint_path(entry: dict[str, Any], base: Path) -> dict[str, Any]:
    """Resolve a relative ``checkpoint`` against the study file's folder."""
    ckpt = entry.get("checkpoint")
    if ckpt is not None:
        if not isinstance(ckpt, str) or not ckpt:
            raise ValueError(f"[[rankers]] checkpoint must be a folder path (a string); got {ckpt!r}")
        entry["checkpoint"] = str((base / Path(ckpt).expanduser()).resolve())
    return entry


def load_config(path: str | PathLike[str]) -> StudyConfig:
    """Read a study from a TOML file.

    The file has a ``[study]`` table with the scalar fields of
    :class:`StudyConfig`, ``[[conditions]]`` and ``[[rankers]]`` arrays of
    tables, and an optional ``[bayes]`` table. Unknown keys are errors.
    """
    p = Path(path)
    raw = _load_toml(p)
    study = dict(raw.get("study", {}))
    if "name" not in study:
        study["name"] = p.stem
    conditions = tuple(
        ConditionConfig(**_only_known("conditions", dict(c), ConditionConfig)) for c in raw.get("conditions", [])
    )
    rankers = tuple(
        RankerConfig(**_with_checkpoint_path(_only_known("rankers", dict(r), RankerConfig), p.parent))
        for r in raw.get("rankers", [])
    )
    bayes_raw = _only_known("bayes", dict(raw.get("bayes", {})), BayesConfig)
    if "families" in bayes_raw:
        bayes_raw["families"] = tuple(bayes_raw["families"])
    unknown_tables = sorted(set(raw) - {"study", "conditions", "rankers", "bayes"})
    if unknown_tables:
        raise ValueError(f"config file {p} has unknown tables {', '.join(unknown_tables)}")
    study = _only_known("study", study, StudyConfig)
    if "risk_grid" in study:
        study["risk_grid"] = tuple(float(b) for b in study["risk_grid"])
    for key in ("metrics", "recalibrators"):
        if key in study:
            study[key] = tuple(study[key])
    for key in ("conditions", "rankers", "bayes"):
        if key in study:
            raise ValueError(f"[study] must not hold {key!r}; use the [{key}] table(s)")
    return StudyConfig(conditions=conditions, rankers=rankers, bayes=BayesConfig(**bayes_raw), **study)
