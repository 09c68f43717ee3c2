"""Pointwise yes/no LLM rerankers for uncertank (ranker ``llm``) and the uncertainty methods that fit them.

Importing this package is light: torch, transformers and peft load when a
class is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = [
    "AnswerModel",
    "FORMATS",
    "INSTRUCTIONS",
    "KINDS",
    "LLMLaplaceRanker",
    "LLMRanker",
    "ListwiseRanker",
    "LoRADropoutRanker",
    "LoRAEnsembleRanker",
    "PromptEnsembleRanker",
    "PromptFormat",
    "answer_token_ids",
    "base_fingerprint",
    "encode_prompts",
    "lora_dropout_active",
    "model_kind",
    "packaged_model",
    "pad_batch",
    "prompt_format",
    "read_language_model",
    "score_prompts",
    "single_token_ids",
]

__getattr__ = lazy_exports(__name__, {
    "FORMATS": "uncertank_llm.prompts",
    "PromptFormat": "uncertank_llm.prompts",
    "answer_token_ids": "uncertank_llm.prompts",
    "prompt_format": "uncertank_llm.prompts",
    "single_token_ids": "uncertank_llm.prompts",
    "KINDS": "uncertank_llm.model",
    "AnswerModel": "uncertank_llm.model",
    "encode_prompts": "uncertank_llm.model",
    "model_kind": "uncertank_llm.model",
    "packaged_model": "uncertank_llm.model",
    "pad_batch": "uncertank_llm.model",
    "read_language_model": "uncertank_llm.model",
    "score_prompts": "uncertank_llm.model",
    "LLMRanker": "uncertank_llm.ranker",
    "base_fingerprint": "uncertank_llm.ranker",
    "INSTRUCTIONS": "uncertank_llm.uncertainty",
    "LLMLaplaceRanker": "uncertank_llm.uncertainty",
    "LoRADropoutRanker": "uncertank_llm.uncertainty",
    "LoRAEnsembleRanker": "uncertank_llm.uncertainty",
    "PromptEnsembleRanker": "uncertank_llm.uncertainty",
    "lora_dropout_active": "uncertank_llm.uncertainty",
    "ListwiseRanker": "uncertank_llm.listwise",
})
