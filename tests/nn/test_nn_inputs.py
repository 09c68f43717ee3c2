from __future__ import annotations

import numpy as np
import pytest

from uncertank.nn import (
    TURN_TOKEN,
    UTTERANCE_TOKEN,
    add_separator_tokens,
    encode_pairs,
    encode_queries,
    turn_text,
)


def reference_encode(tok, context, response, max_length):
    """Plain-loop reference: drop oldest turns until the pair fits, else cut the newest from its start."""
    turns = [tok(turn_text(t), add_special_tokens=False)["input_ids"] for t in context]
    resp = tok(response, add_special_tokens=False)["input_ids"]
    body = max_length - 3
    ctx_len = sum(len(t) for t in turns)
    keep_r = min(len(resp), max(body // 2, body - ctx_len))
    budget = body - keep_r
    kept: list[int] = []
    for t in reversed(turns):
        if len(kept) + len(t) <= budget:
            kept = t + kept
        else:
            if not kept:
                kept = t[len(t) - budget :] if budget > 0 else []
            break
    ids = [tok.cls_token_id, *kept, tok.sep_token_id, *resp[:keep_r], tok.sep_token_id]
    types = [0] * (len(kept) + 2) + [1] * (keep_r + 1)
    return ids, types


def test_turn_text_marks_utterances_and_turns():
    assert turn_text("hi\n\nanyone here? ") == f"hi {UTTERANCE_TOKEN} anyone here? {UTTERANCE_TOKEN} {TURN_TOKEN}"
    assert turn_text("") == TURN_TOKEN


def test_separator_tokens_added_once(tokenizer):
    assert add_separator_tokens(tokenizer) == 0  # the fixture added them already
    ids = tokenizer("a [U] b [T]", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids([UTTERANCE_TOKEN, TURN_TOKEN]) == [ids[1], ids[3]]


def test_layout_of_one_pair(tokenizer):
    enc = encode_pairs(tokenizer, [["my wifi is down", "did you reboot\nyes"]], ["try the driver"], np.array([0]))
    tokens = tokenizer.convert_ids_to_tokens(enc.sequence(0))
    assert tokens == [
        "[CLS]", "my", "wi", "##fi", "is", "down", "[U]", "[T]", "did", "you", "re", "##boot", "[U]",
        "yes", "[U]", "[T]", "[SEP]", "try", "the", "driver", "[SEP]",
    ]
    assert enc.token_type_ids.tolist() == [0] * 17 + [1] * 4


@pytest.mark.parametrize("max_length", [5, 9, 16, 24, 40, 128])
def test_matches_plain_loop_reference(tokenizer, max_length):
    rng = np.random.default_rng(max_length)
    words = "the a wifi sound driver install reboot kernel usb mount grub please thanks why".split()
    contexts, candidates, qidx = [], [], []
    for q in range(12):
        n_turns = int(rng.integers(0, 5))
        contexts.append([
            "\n".join(" ".join(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(int(rng.integers(1, 3))))
            for _ in range(n_turns)
        ])
        for _ in range(int(rng.integers(1, 4))):
            candidates.append(" ".join(rng.choice(words, int(rng.integers(1, 30)))))
            qidx.append(q)
    enc = encode_pairs(tokenizer, contexts, candidates, np.array(qidx), max_length=max_length)
    assert enc.n_pairs == len(candidates)
    assert (enc.lengths <= max_length).all()
    for i, (q, cand) in enumerate(zip(qidx, candidates, strict=True)):
        ids, types = reference_encode(tokenizer, contexts[q], cand, max_length)
        assert enc.sequence(i) == ids, i
        lo, hi = enc.offsets[i], enc.offsets[i + 1]
        assert enc.token_type_ids[lo:hi].tolist() == types


def test_truncation_drops_oldest_turn_first(tokenizer):
    context = ["oldest turn " * 5, "middle turn", "newest turn"]
    enc = encode_pairs(tokenizer, [context], ["ok"], np.array([0]), max_length=16)
    text = tokenizer.decode(enc.sequence(0))
    assert "newest" in text and "middle" in text and "oldest" not in text


def test_newest_turn_cut_from_its_start_when_alone_too_long(tokenizer):
    context = ["one two three four five six seven eight nine ten eleven twelve"]
    enc = encode_pairs(tokenizer, [context], ["ok"], np.array([0]), max_length=10)
    tokens = tokenizer.convert_ids_to_tokens(enc.sequence(0))
    assert len(tokens) == 10
    assert tokens[:1] == ["[CLS]"] and tokens[-4:] == ["[T]", "[SEP]", "ok", "[SEP]"]
    assert "twelve" in tokens and "one" not in tokens


def test_batch_pads_and_masks(tokenizer, queries):
    enc = encode_queries(tokenizer, queries, max_length=32)
    idx = np.array([3, 0, 7])
    arrays = enc.batch_arrays(idx)
    width = enc.lengths[idx].max()
    assert arrays["input_ids"].shape == (3, width)
    for row, i in enumerate(idx):
        n = enc.lengths[i]
        assert arrays["input_ids"][row, :n].tolist() == enc.sequence(i)
        assert (arrays["input_ids"][row, n:] == tokenizer.pad_token_id).all()
        assert arrays["attention_mask"][row].tolist() == [1] * n + [0] * (width - n)
    batch = enc.batch(idx)
    assert batch["input_ids"].dtype.is_floating_point is False


def test_errors_name_the_argument(tokenizer):
    with pytest.raises(ValueError, match="max_length"):
        encode_pairs(tokenizer, [["a"]], ["b"], np.array([0]), max_length=4)
    with pytest.raises(ValueError, match="query_index must have shape"):
        encode_pairs(tokenizer, [["a"]], ["b", "c"], np.array([0]))
    with pytest.raises(ValueError, match="query_index must lie"):
        encode_pairs(tokenizer, [["a"]], ["b"], np.array([1]))
    from transformers import AutoTokenizer

    from uncertank.nn import default_backbone_path

    plain = AutoTokenizer.from_pretrained(default_backbone_path(), local_files_only=True)
    with pytest.raises(ValueError, match=r"separator token '\[U\]'"):
        encode_pairs(plain, [["a"]], ["b"], np.array([0]))
