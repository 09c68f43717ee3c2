"""Deep ensembles: M cross-encoders fine-tuned from different seeds."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import Self

from uncertank import CostRates, Predictions, PredictiveSamples, QuerySet
from uncertank.nn import (
    NeuralRanker,
    atomic_directory,
    get_accelerator,
    is_main_process,
    read_manifest,
    score_probabilities,
    write_manifest,
)
from uncertank.params import Parameters
from uncertank.plugins import UnknownParameterError
from uncertank.validation import check_bool, check_positive_int

__all__ = ["DeepEnsembleRanker"]

#: The members' parameters the ensemble takes through ``**params`` (NeuralRanker's, less its own), with defaults.
_MEMBER_PARAMS: dict[str, Any] = {
    k: v for k, v in (NeuralRanker.__init__.__kwdefaults__ or {}).items() if k not in ("pretrained", "show_progress")
}


class DeepEnsembleRanker(Parameters):
    """M cross-encoders trained from different seeds on the same data.

    Deep ensembles (Lakshminarayanan et al., NeurIPS 2017) as Penha & Hauff
    use them (EACL 2021, section 3.2): member ``m`` is a
    :class:`~uncertank.nn.NeuralRanker` fine-tuned with seed ``seed + m``
    (its own head initialisation, negatives and batch order); the mean over
    members is the prediction and their spread its uncertainty. Row ``m`` of
    :meth:`predict_samples` is member ``m``'s prediction, a joint draw.

    Inference encodes every batch once and runs it through all members, either
    one member after another or, with ``stacked=True``, in one
    ``torch.func.vmap`` call over the stacked weights
    (``torch.func.stack_module_state``).

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker`; shared by all members.
    n_members : int, optional
        M (5 by default, as in the paper; the number of folders with
        ``pretrained``); at least 2.
    stacked : bool or None
        Evaluate the members with ``vmap`` over stacked weights (on CUDA with
        PyTorch's math attention, the kernel that accepts a batched call; see
        :func:`uncertank.nn.score_probabilities`). ``None`` (the default) and
        ``False`` run the members one after another on every device: that
        measured faster on the CPU (see the benchmark in the user guide), and
        on CUDA the fused attention kernels refuse the stacked call.
    pretrained : sequence of str or path, optional
        The user's own trained cross-encoders (Hugging Face or
        sentence-transformers folders, see
        :func:`uncertank.nn.from_pretrained`), one member each, used as they
        are: e.g. fine-tunes from different seeds. Members may differ in
        architecture and tokenizer; each then reads the pairs in its own
        format.
    show_progress : bool or None
        Progress bars while training and scoring, as in
        :class:`uncertank.nn.NeuralRanker` (None: its default); named here so
        that a study can turn them off (:func:`uncertank.protocols.takes_show_progress`).
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`.
    """

    name = "ensemble"
    _params_passed_to = NeuralRanker
    seed: int  # with every other parameter of the members, set from ``**params``
    #: Its members' cost rates are a torch network's (:class:`uncertank.ProbeScaled`).
    cost_scales_with_probe = True

    def __init__(
        self,
        backbone: Any = None,
        *,
        n_members: int | None = None,
        stacked: bool | None = None,
        pretrained: Sequence[str | os.PathLike[str]] | None = None,
        show_progress: bool | None = None,
        **params: Any,
    ) -> None:
        self.backbone = backbone
        self.n_members = n_members
        self.stacked = stacked
        self.pretrained = pretrained
        self.show_progress = show_progress
        unknown = sorted(set(params) - set(_MEMBER_PARAMS))
        if unknown:  # the library's error for a keyword nobody takes, naming what the ensemble and members take
            raise UnknownParameterError(type(self).name, unknown[0], type(self).param_names(), True)
        for key, default in _MEMBER_PARAMS.items():
            if key != "name":
                setattr(self, key, params.get(key, default))
        if params.get("name") is not None:
            self.name = params["name"]
        self._check_params()
        self._kept_first = False
        self.members: list[NeuralRanker] = [self._member(m) for m in range(self.n_members_)]

    def _check_params(self) -> None:
        # each argument's type and domain first, so that the checks behind read checked values
        if self.n_members is not None:
            check_positive_int(self.n_members, "n_members", minimum=2)
        if self.stacked is not None:
            check_bool(self.stacked, "stacked")
        if self.show_progress is not None:
            check_bool(self.show_progress, "show_progress")
        check_positive_int(self.seed, "seed", minimum=0)
        folders = _check_folders(self.pretrained, self.n_members)
        if folders is not None and self.backbone is not None:
            raise ValueError(f"give pretrained or backbone, not both (got backbone={self.backbone!r})")
        check_positive_int(self.n_members_, "n_members", minimum=2)
        self._member(0)  # the members' parameters are checked as each member checks them

    @property
    def n_members_(self) -> int:
        """M: ``n_members``, else the number of ``pretrained`` folders, else 5."""
        if self.pretrained is not None and self.n_members is None:
            return len(self.pretrained)
        return 5 if self.n_members is None else int(self.n_members)

    @property
    def params(self) -> dict[str, Any]:
        """The parameters every member is built with (those of :class:`~uncertank.nn.NeuralRanker`)."""
        params = {k: getattr(self, k) for k in _MEMBER_PARAMS if k not in ("seed", "name")}
        if self.show_progress is not None:
            params["show_progress"] = self.show_progress
        return params

    def _member(self, m: int) -> NeuralRanker:
        """Member ``m``: seed ``seed + m``, its own ``pretrained`` folder if any, every other parameter shared."""
        own: dict[str, Any] = {} if self.pretrained is None else {"pretrained": list(self.pretrained)[m]}
        return NeuralRanker(
            self.backbone, seed=int(self.seed) + m, name=f"{self.name}[{m}]", **own, **self.params,
        )

    def missing_requirements(self) -> list[tuple[str, str]]:
        """What the members need and the machine lacks (:class:`uncertank.RequirementChecking`)."""
        return self.members[0].missing_requirements()

    @classmethod
    def from_members(
        cls, members: Sequence[NeuralRanker], *, name: str = "ensemble", stacked: bool | None = None
    ) -> Self:
        """Build from already fitted cross-encoders (sharing one tokenizer and architecture)."""
        members = list(members)
        if len(members) < 2:
            raise ValueError(f"members must hold at least 2 rankers; got {len(members)}")
        for i, m in enumerate(members):
            if not isinstance(m, NeuralRanker):
                raise TypeError(f"members[{i}] must be a NeuralRanker; got {type(m).__name__}")
        first = members[0]
        new = cls.__new__(cls)
        for key in _MEMBER_PARAMS:  # the first member's parameters, as the constructor stores them
            if key != "name":
                setattr(new, key, getattr(first, key))
        new.backbone, new.n_members, new.stacked, new.pretrained = first.backbone, len(members), stacked, None
        new.show_progress, new.name = first.show_progress, name
        if all(m.pretrained is not None for m in members):
            new.pretrained = [m.pretrained for m in members if m.pretrained is not None]
        new._kept_first = False
        new.members = members
        return new

    @classmethod
    def from_ranker(cls, ranker: NeuralRanker, *, n_members: int = 5, stacked: bool | None = None) -> Self:
        """An ensemble whose member 0 is the fitted ``ranker`` (e.g. ``bert``); :meth:`fit` trains the others.

        Member ``m`` of the others gets seed ``ranker``'s seed ``+ m`` and
        every other parameter of ``ranker``, as in the constructor, so the
        result equals an ensemble trained from scratch with the same seeds
        while ``ranker`` is trained only once.

        Parameters
        ----------
        ranker : NeuralRanker
            A fitted cross-encoder.
        n_members : int
            M, including ``ranker``; at least 2.
        stacked : bool or None
            As in the constructor.
        """
        if not isinstance(ranker, NeuralRanker):
            raise TypeError(f"ranker must be a NeuralRanker (such as bert); got {type(ranker).__name__}")
        if not ranker.is_fitted:
            raise ValueError("ranker must be fitted before it becomes an ensemble member; call fit first")
        params = {k: v for k, v in ranker.get_params().items() if k in _MEMBER_PARAMS and k not in ("name", "seed")}
        new = cls(ranker.backbone, n_members=n_members, stacked=stacked, seed=ranker.seed,
                  show_progress=ranker.show_progress, **params)
        new.members[0] = ranker
        new._kept_first = True
        return new

    @property
    def is_fitted(self) -> bool:
        """True when every member is fitted."""
        return all(m.is_fitted for m in self.members)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """A member's rates (:meth:`uncertank.nn.NeuralRanker.cost_rates`) times the members trained and scored.

        Started from a ranker, member 0 is that ranker and trains nothing. On
        the real run (docs/results/real_run_ensemble.json, two CPU cores) four
        new members trained in 2306.5 s on 9,539 queries (the base class's
        training rate comes from them) and five scored 6,000 pairs in 159.2 s,
        0.89 of five times bert's 35.8 s.
        """
        one = self.members[0].cost_rates()
        if one is None:
            return None
        n = len(self.members)
        trained = n - 1 if warm_start else n
        return CostRates(one.fit_per_query * trained, one.predict_per_pair * n)

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune the members on ``train`` (each keeps its best validation epoch).

        A member taken over already fitted by :meth:`from_ranker` is kept as it
        is; every other member is (re)trained.
        """
        kept = self.members[0] if getattr(self, "_kept_first", False) else None
        for member in self.members:
            if member is not kept:
                member.fit(train, valid)
        return self

    def _use_stacked(self) -> bool:
        return bool(self.stacked)

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Member predictions, shape (n_samples, n_pairs).

        Parameters
        ----------
        queries : QuerySet
        n_samples : int, optional
            Use the first ``n_samples`` members; all by default.
        """
        members = self.members
        queries = members[0].check_queries(queries)
        if n_samples is not None:
            check_positive_int(n_samples, "n_samples")
            if n_samples > len(members):
                raise ValueError(f"n_samples must be <= n_members ({len(members)}); got {n_samples}")
            members = members[:n_samples]
        for m in members:
            m.check_fitted()
        first = members[0]
        if any(m.pretrained is not None for m in members):  # each member reads pairs in its own format
            rows = [m.score(queries)[0] for m in members]
            return PredictiveSamples(np.vstack(rows), queries.offsets, ranker=self.name)
        models = [m.build_model() for m in members]
        enc = first.encode(queries)
        probs = score_probabilities(
            models, enc, batch_size=first.eval_batch_size,
            accelerator=get_accelerator(first.device), stacked=self._use_stacked() and len(models) > 1,
            show_progress=first.show_progress, desc=self.name,
        )
        return PredictiveSamples(probs, queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """The members' mean prediction, shape (n_pairs,)."""
        return self.predict_samples(queries).to_predictions()

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the ensemble into the folder ``path``: one sub-folder per member.

        The folder rule is :meth:`uncertank.nn.NeuralRanker.save`'s: a new or
        empty folder, or one holding an earlier checkpoint, which is
        replaced; any other folder is refused
        (:class:`uncertank.FolderInUseError`) unless ``overwrite`` is true,
        and even then only the checkpoint's own entries are replaced. A
        member that is not fitted is refused (:class:`uncertank.NotFittedError`)
        before anything is written.
        """
        for member in self.members:
            member.check_fitted()
        if not is_main_process():
            return
        with atomic_directory(path, overwrite=overwrite) as tmp:
            for m, member in enumerate(self.members):
                (tmp / f"member_{m}").mkdir()
                member.save_into(tmp / f"member_{m}", member.build_model())
            write_manifest(tmp, {
                "ranker": type(self).name,
                "class": f"{type(self).__module__}:{type(self).__qualname__}",
                "params": {**self.params, "seed": self.seed, "name": self.name},
                "extra": {"n_members": len(self.members), "stacked": self.stacked},
            })

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Rebuild an ensemble written by :meth:`save`.

        ``overrides`` are the constructor's parameters (the checkpoint
        contract, docs/plugins.md): ``stacked`` and ``name`` apply to the
        ensemble, ``n_members`` must equal the saved count, and the rest
        (``device``, ``eval_batch_size``, ``show_progress``, ...) go to every member.
        """
        manifest = read_manifest(path)
        n = int(manifest["extra"]["n_members"])
        if "n_members" in overrides and overrides["n_members"] != n:
            raise ValueError(
                f"n_members must equal the checkpoint's {n} members (or be left out); got {overrides['n_members']!r}"
            )
        member_overrides = {k: v for k, v in overrides.items() if k not in ("stacked", "name", "n_members")}
        members = [NeuralRanker.load(Path(path) / f"member_{m}", **member_overrides) for m in range(n)]
        stacked = overrides.get("stacked", manifest["extra"].get("stacked"))
        name = overrides.get("name", manifest["params"].get("name", "ensemble"))
        return cls.from_members(members, name=name, stacked=stacked)

    def __repr__(self) -> str:
        return f"DeepEnsembleRanker(n_members={len(self.members)}, name={self.name!r})"


def _check_folders(pretrained: Any, n_members: int | None) -> list[str] | None:
    """``pretrained`` as a list of at least two folder paths (or None), consistent with ``n_members``."""
    if pretrained is None:
        return None
    if isinstance(pretrained, (str, os.PathLike)) or not isinstance(pretrained, Sequence):
        raise TypeError(
            "pretrained must be a list of at least 2 model folders, one per member; "
            f"got {type(pretrained).__name__}"
        )
    folders = list(pretrained)
    if len(folders) < 2:
        raise ValueError(f"pretrained must list at least 2 model folders, one per member; got {len(folders)}")
    if n_members is not None and n_members != len(folders):
        raise ValueError(f"n_members must equal the number of pretrained folders ({len(folders)}); got {n_members}")
    seen: dict[str, int] = {}
    for i, f in enumerate(folders):
        if not isinstance(f, (str, os.PathLike)):
            raise TypeError(f"pretrained[{i}] must be a folder path; got {type(f).__name__}")
        key = os.path.realpath(f)
        if key in seen:
            raise ValueError(
                f"pretrained[{i}] is the same folder as pretrained[{seen[key]}] ({str(f)!r}): identical members "
                "agree on every pair, so the ensemble's variance would be 0; give one folder per independently "
                "trained model (different seeds or fine-tunes)"
            )
        seen[key] = i
    return [str(f) for f in folders]


