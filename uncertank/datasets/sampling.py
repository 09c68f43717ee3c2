"""The sampling specification: how the candidates of every query are drawn.

One :class:`NegativeSampling` travels down the dataset chain
(:func:`uncertank.datasets.load` -> a loader -> :func:`build_query_set`
-> :func:`assemble_query_set`, and :func:`redraw_negatives`), checked once
where it is made; every default (the sampler, ``n_candidates``, the seed,
the order of the lists) is written here and only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from uncertank.validation import check_bool, check_positive_int, check_seed

__all__ = ["DEFAULT_N_CANDIDATES", "DEFAULT_NEGATIVES", "NegativeSampling"]

#: Candidates per query, the relevant one included, when nothing else is asked for.
DEFAULT_N_CANDIDATES = 10
#: The negative sampler when nothing else is asked for.
DEFAULT_NEGATIVES = "random"


@dataclass(frozen=True)
class NegativeSampling:
    """How the candidates of every query are drawn.

    Attributes
    ----------
    negatives : str
        A registered negative sampler (``random``, ``bm25``, ``embedding``, ...).
    n_candidates : int
        Candidates per query: one relevant plus ``n_candidates - 1``
        negatives; ``>= 2``.
    seed : int
        Seeds the sampler and the shuffling of each candidate list.
    sampler_options : mapping
        Extra keyword arguments of the sampler's factory (``{"k1": 1.2}``
        for ``bm25``).
    relevant_first : bool
        Put the relevant candidate first and the negatives after it in the
        sampler's order (the layout of the UDC test files) instead of
        shuffling each list.

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type or out of range; the message names it.

    Examples
    --------
    >>> NegativeSampling.of(n_candidates=5)
    NegativeSampling(negatives='random', n_candidates=5, seed=0, sampler_options={}, relevant_first=False)
    """

    negatives: str = DEFAULT_NEGATIVES
    n_candidates: int = DEFAULT_N_CANDIDATES
    seed: int = 0
    sampler_options: Mapping[str, object] = field(default_factory=dict)
    relevant_first: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.negatives, str) or not self.negatives:
            raise TypeError(
                "negatives must be the name of a registered sampler such as 'random', 'bm25' or 'embedding'; "
                f"got {type(self.negatives).__name__} {self.negatives!r}"
            )
        object.__setattr__(self, "n_candidates", check_positive_int(self.n_candidates, "n_candidates", minimum=2))
        object.__setattr__(self, "seed", check_seed(self.seed, allow_none=False, generator=False))
        if not isinstance(self.sampler_options, Mapping):
            raise TypeError(f"sampler_options must be a mapping; got {type(self.sampler_options).__name__}")
        object.__setattr__(self, "sampler_options", dict(self.sampler_options))
        object.__setattr__(self, "relevant_first", check_bool(self.relevant_first, "relevant_first"))

    @classmethod
    def of(
        cls,
        *,
        negatives: str | None = None,
        n_candidates: int | None = None,
        seed: int | None = None,
        sampler_options: Mapping[str, object] | None = None,
        relevant_first: bool | None = None,
    ) -> NegativeSampling:
        """The specification with the given fields; None (or omitted) takes the default."""
        return cls(
            negatives=DEFAULT_NEGATIVES if negatives is None else negatives,
            n_candidates=DEFAULT_N_CANDIDATES if n_candidates is None else n_candidates,
            seed=0 if seed is None else seed,
            sampler_options={} if sampler_options is None else sampler_options,
            relevant_first=False if relevant_first is None else relevant_first,
        )

    @classmethod
    def resolve(
        cls,
        sampling: NegativeSampling | None,
        *,
        negatives: str | None = None,
        n_candidates: int | None = None,
        seed: int | None = None,
        sampler_options: Mapping[str, object] | None = None,
        relevant_first: bool | None = None,
    ) -> NegativeSampling:
        """``sampling`` as it is, or one made by :meth:`of` from the separate keyword arguments.

        Raises
        ------
        TypeError
            When both ``sampling`` and a separate option are given, or
            ``sampling`` is not a NegativeSampling.
        """
        options = {"negatives": negatives, "n_candidates": n_candidates, "seed": seed,
                   "sampler_options": sampler_options, "relevant_first": relevant_first}
        set_ = sorted(k for k, v in options.items() if v is not None)
        if sampling is None:
            return cls.of(negatives=negatives, n_candidates=n_candidates, seed=seed, sampler_options=sampler_options,
                          relevant_first=relevant_first)
        if not isinstance(sampling, NegativeSampling):
            raise TypeError(f"sampling must be a NegativeSampling; got {type(sampling).__name__}")
        if set_:
            raise TypeError(f"pass either sampling or {', '.join(set_)}, not both")
        return sampling

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The names of the fields (the keyword arguments the dataset functions take for them)."""
        return tuple(f.name for f in fields(cls))
