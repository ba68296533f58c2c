"""The HF byte-level tokenizer: the SDK byte tokenizer's ids, its chat template, and a folder round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from trainer_adapter.model.tokenizer import VOCAB_SIZE, build_tokenizer, byte_symbols
from verifiers.testing import SPECIAL_TOKENS, ByteTokenizer

CONVERSATION = [
    {"role": "system", "content": "Add."},
    {"role": "user", "content": "héllo\tworld 12+3 <|im_end|> \x00 ✓"},
    {"role": "assistant", "content": "15"},
]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def _ids(encoded) -> list[int]:
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def test_byte_symbols_are_a_bijection_onto_printable_characters() -> None:
    symbols = byte_symbols()
    assert len(set(symbols)) == 256
    assert all(s.isprintable() and not s.isspace() for s in symbols)
    assert symbols[ord("a")] == "a"


@pytest.mark.parametrize("text", ["plain", "héllo ✓", "a\nb\tc  d", "<|im_start|>x<|im_end|>", "\x00\x7f", ""])
def test_ids_equal_the_sdk_byte_tokenizer(tokenizer, text: str) -> None:
    assert tokenizer.encode(text, add_special_tokens=False) == ByteTokenizer().encode(text)
    assert tokenizer.decode(ByteTokenizer().encode(text)) == text


def test_vocabulary_and_special_tokens(tokenizer) -> None:
    assert len(tokenizer) == VOCAB_SIZE == 256 + len(SPECIAL_TOKENS)
    assert tokenizer.eos_token_id == ByteTokenizer().eos_token_id
    assert tokenizer.pad_token_id == ByteTokenizer().pad_token_id


def test_chat_template_renders_like_the_sdk(tokenizer) -> None:
    for generation in (False, True):
        messages = CONVERSATION[:2] if generation else CONVERSATION
        ours = _ids(tokenizer.apply_chat_template(messages, add_generation_prompt=generation, tokenize=True))
        assert ours == ByteTokenizer().apply_chat_template(messages, add_generation_prompt=generation)


def test_folder_round_trip_with_auto_tokenizer(tokenizer, tmp_path: Path) -> None:
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    expected = ByteTokenizer().apply_chat_template(CONVERSATION)
    assert _ids(loaded.apply_chat_template(CONVERSATION, tokenize=True)) == expected
    assert loaded.eos_token_id == tokenizer.eos_token_id
