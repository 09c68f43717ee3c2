"""Built-in datasets and negative samplers, registered through the hooks."""

from __future__ import annotations

from collections.abc import Callable

from uncertank.hookspecs import hookimpl


@hookimpl
def uncertank_datasets() -> dict[str, Callable[..., object]]:
    """Register the built-in datasets: two bundled corpora, two file formats and ir_datasets' collections."""
    from uncertank.datasets.conversation import load_chitchat, load_ubuntu_sample
    from uncertank.datasets.formats import FileLoader
    from uncertank.datasets.irds import IrdsLoader

    return {
        "ubuntu-sample": load_ubuntu_sample,
        "chitchat": load_chitchat,
        "tsv:": FileLoader("tsv"),
        "jsonl:": FileLoader("jsonl"),
        "irds:": IrdsLoader(),
    }


@hookimpl
def uncertank_negative_samplers() -> dict[str, Callable[..., object]]:
    """Register the built-in negative samplers (Penha & Hauff 2021's NS strategies)."""
    from uncertank.datasets.samplers import BM25Sampler, EmbeddingSampler, RandomSampler

    return {"random": RandomSampler, "bm25": BM25Sampler, "embedding": EmbeddingSampler}
