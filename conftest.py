"""Fixtures shared by the core tests and the plugins' tests: a tiny random BERT and toy queries."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# JAX, where a test's dependency imports it on a GPU machine, takes 75% of the GPU's memory at start;
# the workers share the GPU, so it allocates as it goes (an H100 run lost 33 tests to one worker's 60 GiB).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# Under pytest-xdist, the cores are shared among the workers: with each worker's OpenMP and BLAS pools as
# wide as the machine, two workers on two cores ran four threads that waited on each other (the torch
# tests took 18% longer). Set before torch or numpy is imported; the tests' subprocesses inherit it.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1:
    _threads = str(max(1, (os.cpu_count() or 1) // _workers))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)


def pytest_configure(config):
    """Under pytest-xdist on a GPU, each worker may take its share of the GPU's memory and no more.

    The workers share one GPU: a test that takes more than its share fails with an out-of-memory error
    that names it, instead of starving the tests running beside it.
    """
    import importlib.util

    if _workers <= 1 or importlib.util.find_spec("torch") is None:
        return
    import torch

    if torch.cuda.is_available():
        torch.cuda.set_per_process_memory_fraction(0.9 / _workers)


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from uncertank.nn import add_separator_tokens, default_backbone_path

    tok = AutoTokenizer.from_pretrained(default_backbone_path(), local_files_only=True)
    add_separator_tokens(tok)
    return tok


@pytest.fixture
def tiny():
    from uncertank.nn.testing import tiny_config

    return tiny_config()


@pytest.fixture
def queries():
    from uncertank.nn.testing import toy_queries

    return toy_queries()


def _devices() -> list[str]:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return ["cpu"]
    from uncertank.nn.testing import test_devices

    return test_devices()


@pytest.fixture(params=_devices())
def device(request):
    """Each device a neural test runs on: the CPU always, CUDA as well when torch sees a GPU."""
    return request.param
