"""Fixtures shared by the core tests and the plugins' tests: a tiny random BERT and toy queries."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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
