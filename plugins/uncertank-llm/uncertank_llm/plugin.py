"""The entry point ``llm`` of the group ``uncertank``: the yes/no LLM rankers (torch loads on first use).

``llm`` (zero-shot or LoRA-fine-tuned), ``llm_prompts`` (a prompt ensemble),
``llm_lora_ensemble`` (M adapters over one base), ``llm_mc_dropout`` (dropout
on the adapters at test time), ``llm_laplace`` (last-layer Laplace on the
answer logits) and ``llm_listwise`` (self-consistency over permutations of
the candidate list).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from uncertank import hookimpl

#: What the rankers import when they are built.
NEEDS = ("torch", "transformers", "accelerate", "safetensors", "tqdm", "peft")

#: Registered name -> (module, class).
RANKERS = {
    "llm": ("uncertank_llm.ranker", "LLMRanker"),
    "llm_prompts": ("uncertank_llm.uncertainty", "PromptEnsembleRanker"),
    "llm_lora_ensemble": ("uncertank_llm.uncertainty", "LoRAEnsembleRanker"),
    "llm_mc_dropout": ("uncertank_llm.uncertainty", "LoRADropoutRanker"),
    "llm_laplace": ("uncertank_llm.uncertainty", "LLMLaplaceRanker"),
    "llm_listwise": ("uncertank_llm.listwise", "ListwiseRanker"),
}


def _known(cls: type) -> list[str]:
    """The keyword parameters ``cls`` takes, along its MRO while an ``__init__`` passes ``**params`` on."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            break
    return names


def _factory(name: str) -> Callable[..., Any]:
    module, cls_name = RANKERS[name]

    def build(*args: Any, show_progress: bool = True, **params: Any) -> Any:
        missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(
                f"the ranker {name} needs the optional dependency {', '.join(missing)}; install it with "
                'pip install "uncertank[torch]" peft (or pip install -e ./plugins/uncertank-llm)'
            )
        cls = getattr(importlib.import_module(module), cls_name)
        known = _known(cls)
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise TypeError(
                f"the ranker {name} has no parameter {', '.join(map(repr, unknown))}; its parameters: "
                f"{', '.join(known)}"
            )
        return cls(*args, show_progress=show_progress, **params)

    build.__name__ = name
    build.__doc__ = f"Build :class:`uncertank_llm.{cls_name}` with ``params`` (the model loads on first use)."
    return build


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the LLM rankers."""
    return {name: _factory(name) for name in RANKERS}
