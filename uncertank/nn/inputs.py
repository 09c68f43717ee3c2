"""Cross-encoder inputs: context and response as one token sequence.

A pair (context, response) becomes::

    [CLS] turn_1 [T] turn_2 [T] ... turn_n [T] [SEP] response [SEP]

where each turn is its utterances, each followed by ``[U]`` (a turn holding
several utterances separates them by newlines in the context string). This
is the end-of-utterance / end-of-turn marking of the Ubuntu Dialogue Corpus
v1 (``__eou__``, ``__eot__``; Lowe et al., SIGDIAL 2015), which Penha & Hauff
(EACL 2021, section 4) carry into BERT as the new tokens ``[U]`` and ``[T]``,
added to the tokenizer by :func:`add_separator_tokens`.

Truncation keeps the newest context: whole turns are dropped from the oldest
until the pair fits ``max_length``; when even the newest turn does not fit,
it is cut from its start. The response keeps at least half of the budget (its
end is cut when it is longer) and takes more when the context is short.

Everything is vectorised over flat arrays: tokenisation runs once per turn
and once per candidate, and the per-pair sequences are assembled by NumPy
gathers, not by a Python loop over pairs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from uncertank._types import QuerySet
from uncertank.validation import check_instance, check_positive_int, check_tokenizer

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "TURN_TOKEN",
    "UTTERANCE_TOKEN",
    "EncodedPairs",
    "add_separator_tokens",
    "encode_pairs",
    "encode_queries",
    "turn_text",
]

UTTERANCE_TOKEN = "[U]"
TURN_TOKEN = "[T]"

#: The fewest tokens a pair can take: [CLS] [SEP] [SEP] plus one of each text.
MIN_LENGTH = 5


def add_separator_tokens(tokenizer: PreTrainedTokenizerBase) -> int:
    """Add ``[U]`` and ``[T]`` to ``tokenizer`` as special tokens.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        Modified in place. Tokens already present are not added twice.

    Returns
    -------
    int
        The number of tokens added (0 when both were there).
    """
    vocab = check_tokenizer(tokenizer).get_vocab()
    new = [t for t in (UTTERANCE_TOKEN, TURN_TOKEN) if t not in vocab]
    if not new:
        return 0
    return int(tokenizer.add_special_tokens({"additional_special_tokens": new}))


def turn_text(turn: str) -> str:
    r"""One context turn as text: each of its lines followed by ``[U]``, then ``[T]``.

    Examples
    --------
    >>> turn_text("hi\nanyone here?")
    'hi [U] anyone here? [U] [T]'
    """
    utterances = [u.strip() for u in str(turn).split("\n") if u.strip()]
    body = "".join(f"{u} {UTTERANCE_TOKEN} " for u in utterances)
    return f"{body}{TURN_TOKEN}"


def _tokenize_flat(
    tokenizer: PreTrainedTokenizerBase, texts: Sequence[str]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Token ids of ``texts`` as one flat array plus CSR offsets of shape (len(texts) + 1,)."""
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if not texts:
        return np.zeros(0, dtype=np.int64), offsets
    enc = tokenizer(
        list(texts), add_special_tokens=False, return_attention_mask=False,
        return_token_type_ids=False, verbose=False,
    )["input_ids"]
    np.cumsum([len(ids) for ids in enc], out=offsets[1:])
    flat = np.fromiter(itertools.chain.from_iterable(enc), dtype=np.int64, count=int(offsets[-1]))
    return flat, offsets


@dataclass(frozen=True, eq=False)
class EncodedPairs:
    """Token sequences of ``n_pairs`` (context, response) pairs, stored ragged.

    Parameters
    ----------
    input_ids : ndarray of shape (n_tokens,)
        All sequences' token ids, concatenated.
    token_type_ids : ndarray of shape (n_tokens,)
        0 for ``[CLS]``, context and the first ``[SEP]``; 1 for the response
        and the final ``[SEP]``.
    offsets : ndarray of shape (n_pairs + 1,)
        Sequence ``i`` is ``input_ids[offsets[i]:offsets[i + 1]]``.
    pad_token_id : int
        The id used to pad a batch.
    """

    input_ids: NDArray[np.int64]
    token_type_ids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    pad_token_id: int = 0

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> NDArray[np.int64]:
        """Tokens per pair, shape (n_pairs,)."""
        return np.diff(self.offsets)

    def sequence(self, i: int) -> list[int]:
        """The token ids of pair ``i``."""
        ids: list[int] = self.input_ids[self.offsets[i] : self.offsets[i + 1]].tolist()
        return ids

    def batch_arrays(self, indices: NDArray[np.int64]) -> dict[str, NDArray[np.int64]]:
        """Pad the pairs at ``indices`` to their longest: arrays of shape (batch, max_len).

        Returns
        -------
        dict
            ``input_ids``, ``attention_mask`` and ``token_type_ids``, int64.
        """
        idx = np.asarray(indices, dtype=np.int64)
        lengths = self.offsets[idx + 1] - self.offsets[idx]
        width = int(lengths.max()) if idx.size else 0
        rows = np.repeat(np.arange(idx.size), lengths)
        starts = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        cols = np.arange(int(starts[-1])) - np.repeat(starts[:-1], lengths)
        src = np.repeat(self.offsets[idx], lengths) + cols
        ids = np.full((idx.size, width), self.pad_token_id, dtype=np.int64)
        ids[rows, cols] = self.input_ids[src]
        types = np.zeros((idx.size, width), dtype=np.int64)
        types[rows, cols] = self.token_type_ids[src]
        mask = np.zeros((idx.size, width), dtype=np.int64)
        mask[rows, cols] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    def batch(self, indices: NDArray[np.int64], device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
        """Like :meth:`batch_arrays`, as torch tensors on ``device``."""
        import torch

        return {k: torch.from_numpy(v).to(device) for k, v in self.batch_arrays(indices).items()}


def check_pairs(
    contexts: Sequence[Sequence[str]], candidates: Sequence[str], query_index: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Raise unless ``contexts`` and ``candidates`` are sequences and ``query_index`` maps each candidate to a context.

    The door of :func:`encode_pairs` and :func:`uncertank.nn.encode_text_pairs`;
    returns ``query_index`` as an int64 array of shape (len(candidates),).
    """
    for name, value in (("contexts", contexts), ("candidates", candidates)):
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be a sequence of texts, not one text; got {type(value).__name__}")
        check_instance(value, name, (Sequence, np.ndarray), "a sequence (a list or a tuple)")
    try:
        qidx = np.asarray(query_index, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(
            f"query_index must be integers, one per candidate; got {type(query_index).__name__} ({exc})"
        ) from exc
    if qidx.shape != (len(candidates),):
        raise ValueError(
            f"query_index must have shape ({len(candidates)},), one per candidate; got {qidx.shape}"
        )
    if qidx.size and (qidx.min() < 0 or qidx.max() >= len(contexts)):
        raise ValueError(f"query_index must lie in [0, {len(contexts)}); got {qidx.min()}..{qidx.max()}")
    return qidx


def encode_pairs(
    tokenizer: PreTrainedTokenizerBase,
    contexts: Sequence[Sequence[str]],
    candidates: Sequence[str],
    query_index: NDArray[np.int64],
    *,
    max_length: int = 128,
) -> EncodedPairs:
    """Encode (context, candidate) pairs for a cross-encoder.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        Must know ``[U]`` and ``[T]`` (see :func:`add_separator_tokens`) and
        have ``cls_token_id``, ``sep_token_id`` and ``pad_token_id``.
    contexts : sequence of n_queries sequences of str
        Per query, its turns, oldest first.
    candidates : sequence of n_pairs str
        The responses.
    query_index : ndarray of shape (n_pairs,)
        The query of each candidate.
    max_length : int
        The longest sequence, special tokens included (at least 5).

    Returns
    -------
    EncodedPairs
    """
    max_length = check_positive_int(max_length, "max_length", minimum=MIN_LENGTH)
    vocab = check_tokenizer(tokenizer).get_vocab()
    for tok in (UTTERANCE_TOKEN, TURN_TOKEN):
        if tok not in vocab:
            raise ValueError(
                f"tokenizer must contain the separator token {tok!r}; "
                "call uncertank.nn.add_separator_tokens(tokenizer) first"
            )
    qidx = check_pairs(contexts, candidates, query_index)
    cls_id, sep_id = int(tokenizer.cls_token_id), int(tokenizer.sep_token_id)
    pad_id = int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else 0

    # Context: every turn tokenised once; a query's turns are contiguous in ctx_flat.
    turns_per_query = np.array([len(c) for c in contexts], dtype=np.int64)
    turn_texts = [turn_text(t) for c in contexts for t in c]
    ctx_flat, turn_off = _tokenize_flat(tokenizer, turn_texts)
    q_turn_off = np.zeros(len(contexts) + 1, dtype=np.int64)
    np.cumsum(turns_per_query, out=q_turn_off[1:])
    ctx_start = turn_off[q_turn_off[:-1]]
    ctx_end = turn_off[q_turn_off[1:]]
    turn_starts = turn_off[:-1]

    resp_flat, resp_off = _tokenize_flat(tokenizer, [str(c) for c in candidates])
    resp_len = np.diff(resp_off)

    body = max_length - 3
    half = body // 2
    c_start, c_end = ctx_start[qidx], ctx_end[qidx]
    c_full = c_end - c_start
    # The response keeps at least half of the body and whatever the context leaves.
    r_keep = np.minimum(resp_len, np.maximum(half, body - c_full))
    budget = body - r_keep
    # The oldest turn start at or after c_end - budget; else cut inside the newest turn.
    lo = c_end - budget
    if turn_starts.size:
        pos = np.searchsorted(turn_starts, lo, side="left")
        nearest = turn_starts[np.minimum(pos, turn_starts.size - 1)]
        start = np.where((pos < turn_starts.size) & (nearest < c_end), nearest, lo)
    else:
        start = lo
    start = np.maximum(start, c_start)
    c_len = c_end - start

    n = 3 + c_len + r_keep
    off = np.zeros(n.size + 1, dtype=np.int64)
    np.cumsum(n, out=off[1:])
    j = np.arange(int(off[-1])) - np.repeat(off[:-1], n)
    cl = np.repeat(c_len, n)
    in_ctx = (j >= 1) & (j <= cl)
    in_resp = (j >= cl + 2) & (j < np.repeat(n, n) - 1)
    ctx_src = np.where(in_ctx, np.repeat(start, n) + j - 1, 0)
    resp_src = np.where(in_resp, np.repeat(resp_off[:-1], n) + j - cl - 2, 0)
    ids = np.full(j.size, sep_id, dtype=np.int64)
    ids[j == 0] = cls_id
    if ctx_flat.size:
        ids[in_ctx] = ctx_flat[ctx_src[in_ctx]]
    if resp_flat.size:
        ids[in_resp] = resp_flat[resp_src[in_resp]]
    types = (j >= cl + 2).astype(np.int64)
    return EncodedPairs(ids, types, off, pad_id)


def encode_queries(tokenizer: PreTrainedTokenizerBase, queries: QuerySet, *, max_length: int = 128) -> EncodedPairs:
    """Encode every pair of a :class:`~uncertank.QuerySet` (see :func:`encode_pairs`)."""
    check_tokenizer(tokenizer)
    check_instance(queries, "queries", QuerySet)
    return encode_pairs(
        tokenizer, queries.contexts, queries.candidates, queries.query_index, max_length=max_length
    )
