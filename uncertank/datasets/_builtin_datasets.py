"""Built-in datasets and negative samplers, registered through the hooks."""

from __future__ import annotations

from typing import Any

from uncertank.hookspecs import hookimpl


@hookimpl
def uncertank_datasets() -> dict[str, Any]:
    """Register the built-in datasets: two bundled corpora and two file formats."""
    from uncertank.datasets.conversation import load_chitchat, load_ubuntu_sample
    from uncertank.datasets.formats import FileLoader

    return {
        "ubuntu-sample": load_ubuntu_sample,
        "chitchat": load_chitchat,
        "tsv:": FileLoader("tsv"),
        "jsonl:": FileLoader("jsonl"),
    }


@hookimpl
def uncertank_negative_samplers() -> dict[str, Any]:
    """Register the built-in negative samplers (Penha & Hauff 2021's NS strategies)."""
    from uncertank.datasets.samplers import BM25Sampler, EmbeddingSampler, RandomSampler

    return {"random": RandomSampler, "bm25": BM25Sampler, "embedding": EmbeddingSampler}
