r"""Prompt formats of pointwise yes/no rerankers, and the ids of their two answer tokens.

A yes/no reranker asks a language model whether a document answers a query
and reads, at the answer position, the logits of two answer tokens (the
"yes" and the "no" word). P(relevant) is the softmax over those two logits,
column "yes", which equals the sigmoid of their difference
``l_yes - l_no``; that difference is the reranker's score. One definition,
applied once: no second sigmoid, no hard-coded ids (the ids come from the
model's own tokenizer, :func:`answer_token_ids`).

Named formats (:data:`FORMATS`):

- ``"qwen3-reranker"``: Qwen3-Reranker's prompt as its model card builds it:
  a ChatML system turn that asks for "yes" or "no", a user turn
  ``<Instruct>: ...\n<Query>: ...\n<Document>: ...``, and the assistant
  turn opened with an empty thinking block; answers ``yes`` / ``no``.
- ``"monot5"``: monoT5's ``Query: ... Document: ... Relevant:`` (Nogueira
  et al., 2020), read at the decoder's first step; answers ``true`` /
  ``false``.

A user's own format is a template with ``{query}`` and ``{document}`` (and
optionally ``{instruction}``) and its two answer words or token ids.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from uncertank.validation import check_instance, check_tokenizer

__all__ = [
    "FORMATS",
    "QWEN3_INSTRUCTION",
    "QWEN3_SYSTEM",
    "PromptFormat",
    "answer_token_ids",
    "prompt_format",
    "single_token_ids",
]

#: Qwen3-Reranker's system prompt (its model card).
QWEN3_SYSTEM = (
    'Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
    'Note that the answer can only be "yes" or "no".'
)
#: Qwen3-Reranker's default instruction (its model card).
QWEN3_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

_FIELD = re.compile(r"\{(query|document|instruction)\}")


@dataclass(frozen=True)
class PromptFormat:
    """How a (query, document) pair becomes a prompt, and the two answer tokens read after it.

    Parameters
    ----------
    template : str
        The prompt, with ``{query}`` and ``{document}`` (each exactly once) and
        optionally ``{instruction}``; nothing else in it is a field, so other
        braces are kept as they are.
    yes, no : str or int
        The answer words whose logits are read (each must be one token of the
        model's tokenizer), or their token ids.
    instruction : str
        What ``{instruction}`` is replaced by.
    name : str
        The format's name (``"custom"`` for a user's own).

    Examples
    --------
    >>> fmt = PromptFormat("Query: {query} Document: {document} Relevant:", yes="true", no="false")
    >>> fmt.prompt("usb drive", "use mount")
    'Query: usb drive Document: use mount Relevant:'
    """

    template: str
    yes: str | int = "yes"
    no: str | int = "no"
    instruction: str = ""
    name: str = "custom"

    def __post_init__(self) -> None:
        if not isinstance(self.template, str):
            raise TypeError(f"template must be a str with {{query}} and {{document}}; got "
                            f"{type(self.template).__name__}")
        found = _FIELD.findall(self.template)
        for field in ("query", "document"):
            n = found.count(field)
            if n != 1:
                raise ValueError(
                    f"template must hold {{{field}}} exactly once (and {{query}} and {{document}} both); "
                    f"it holds it {n} times: {self.template!r}"
                )
        for which in ("yes", "no"):
            value = getattr(self, which)
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise TypeError(f"the answer {which!r} must be a word (str) or a token id (int); got "
                                f"{type(value).__name__} {value!r}")
            if isinstance(value, str) and not value:
                raise ValueError(f"the answer {which!r} must be a non-empty word or a token id; got ''")
            if isinstance(value, int) and value < 0:
                raise ValueError(f"the answer {which!r} must be a token id >= 0; got {value}")
        if self.yes == self.no:
            raise ValueError(f"the two answers must differ; both are {self.yes!r}")
        if not isinstance(self.instruction, str):
            raise TypeError(f"instruction must be a str; got {type(self.instruction).__name__}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty str; got {self.name!r}")

    def prompt(self, query: str, document: str) -> str:
        """The prompt of one pair: the template with its fields replaced, in one pass."""
        values = {"query": query, "document": document, "instruction": self.instruction}
        return _FIELD.sub(lambda m: values[m.group(1)], self.template)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON values (what a checkpoint stores)."""
        return asdict(self)


#: The named formats.
FORMATS: dict[str, PromptFormat] = {
    "qwen3-reranker": PromptFormat(
        "<|im_start|>system\n" + QWEN3_SYSTEM + "<|im_end|>\n<|im_start|>user\n"
        "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
        yes="yes", no="no", instruction=QWEN3_INSTRUCTION, name="qwen3-reranker",
    ),
    "monot5": PromptFormat("Query: {query} Document: {document} Relevant:", yes="true", no="false", name="monot5"),
}


def prompt_format(
    value: object, *, instruction: str | None = None, answers: tuple[str | int, str | int] | list[Any] | None = None
) -> PromptFormat:
    """``value`` as a :class:`PromptFormat`: a named format, a template string, a dict of fields, or one already.

    Parameters
    ----------
    value : str, dict or PromptFormat
        A name of :data:`FORMATS`; a template holding ``{query}`` and
        ``{document}`` (answers ``yes`` / ``no`` unless ``answers`` says
        otherwise); a dict of :class:`PromptFormat`'s fields.
    instruction : str, optional
        Replaces the format's instruction.
    answers : (yes, no), optional
        Replace the format's answer words or ids.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones), a template
        without its fields, or ``answers`` that are not two words or ids.
    """
    if isinstance(value, PromptFormat):
        fmt = value
    elif isinstance(value, str):
        if value in FORMATS:
            fmt = FORMATS[value]
        elif "{query}" in value or "{document}" in value:
            fmt = PromptFormat(value)
        else:
            raise ValueError(
                f"template must be one of {', '.join(map(repr, FORMATS))} or a prompt holding {{query}} and "
                f"{{document}}; got {value!r}"
            )
    elif isinstance(value, Mapping):
        known = set(PromptFormat.__dataclass_fields__)
        unknown = sorted(set(map(str, value)) - known)
        if unknown:
            raise ValueError(f"template has unknown key(s) {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(sorted(known))}")
        if "template" not in value:
            raise ValueError(f"template, a dict of PromptFormat's fields, must hold the key 'template' (the prompt "
                             f"with {{query}} and {{document}}); got the keys {sorted(map(str, value))}")
        fmt = PromptFormat(**dict(value))
    else:
        raise TypeError(f"template must be a format name, a template str, a dict or a PromptFormat; got "
                        f"{type(value).__name__}")
    if instruction is not None:
        fmt = replace(fmt, instruction=instruction)
    if answers is not None:
        if isinstance(answers, (str, bytes)) or not isinstance(answers, (tuple, list)) or len(answers) != 2:
            raise ValueError(f"answers must be two words or token ids (yes, no); got {answers!r}")
        fmt = replace(fmt, yes=answers[0], no=answers[1])
    return fmt


def single_token_ids(tokenizer: Any, words: Sequence[str | int], what: str = "answer") -> list[int]:
    """The token id of each of ``words`` (an int is taken as an id and checked against the vocabulary).

    A word must be exactly one token (encoded without special tokens);
    otherwise the error names the tokens it became, so that the caller can
    pick one and pass its id.

    Raises
    ------
    TypeError
        When ``tokenizer`` is no tokenizer, ``words`` not a list of words
        (str) and token ids (int), or ``what`` not a str.
    ValueError
        When a word is empty or not one token, an id is negative or lies
        outside the vocabulary, or two words are one token.
    """
    check_tokenizer(tokenizer)
    check_instance(what, "what", str, "a str")
    if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
        raise TypeError(f"words must be a list of words (str) or token ids (int); got {type(words).__name__} "
                        f"{words!r:.80}")
    for i, value in enumerate(words):
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
            raise TypeError(f"words must be a list of words (str) or token ids (int); got "
                            f"{type(value).__name__} {value!r:.80} at index {i}")
        if isinstance(value, str) and not value:
            raise ValueError(f"words must hold non-empty words; got '' at index {i}")
        if isinstance(value, numbers.Integral) and value < 0:
            raise ValueError(f"words must hold token ids >= 0; got {value} at index {i}")
    try:
        vocab = len(tokenizer)
    except TypeError as exc:
        raise TypeError(f"tokenizer must tell its vocabulary's size (len(tokenizer)); got "
                        f"{type(tokenizer).__name__}") from exc
    ids: list[int] = []
    for value in words:
        if isinstance(value, numbers.Integral):
            value = int(value)
            if value >= vocab:
                raise ValueError(f"the {what} {value} is a token id outside the tokenizer's vocabulary of {vocab}")
            ids.append(value)
            continue
        got = tokenizer.encode(value, add_special_tokens=False)
        if len(got) != 1:
            if not got:
                raise ValueError(f"the {what} {value!r} encodes to no token of this tokenizer; give the token ids to "
                                 "read instead")
            raise ValueError(
                f"the {what} {value!r} is {len(got)} tokens of this tokenizer, "
                f"{tokenizer.convert_ids_to_tokens(got)!r} (ids {got}), not one: choose a word that is one token "
                "(a leading space often makes one), or give the token ids to read"
                + (": answers=(yes_id, no_id)" if what.startswith("answer") else "")
            )
        ids.append(int(got[0]))
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"two {what}s of {list(words)!r} are the same token (id {twice}) of this tokenizer")
    return ids


def answer_token_ids(tokenizer: Any, fmt: PromptFormat) -> tuple[int, int]:
    """The token ids of ``fmt``'s two answers in ``tokenizer``'s vocabulary: (yes, no).

    Each answer must be one token (:func:`single_token_ids`, whose errors
    name the tokens a word became).

    Raises
    ------
    TypeError
        When ``tokenizer`` is no tokenizer or ``fmt`` no :class:`PromptFormat`.
    """
    check_tokenizer(tokenizer)
    check_instance(fmt, "fmt", PromptFormat, "a PromptFormat (see prompt_format)")
    yes, no = single_token_ids(tokenizer, [fmt.yes, fmt.no], "answer")
    return yes, no
