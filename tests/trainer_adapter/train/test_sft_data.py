"""SFT rows, tokenisation with completion-only loss, and the step-determined data order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.train.sft_data import SFTDataConfig, load_rows, step_indices, tokenize
from verifiers.testing import ByteTokenizer


def test_completion_tokens_train_up_to_end_of_turn() -> None:
    tokenizer = build_tokenizer()
    prompt = [{"role": "user", "content": "37+45"}]
    sample = tokenize(tokenizer, prompt, [{"role": "assistant", "content": "82"}])
    text = ByteTokenizer().decode(sample.token_ids)
    assert text.endswith("<|im_start|>assistant\n82<|im_end|>\n")
    trained = [t for t, m in zip(sample.token_ids, sample.loss_mask) if m]
    assert ByteTokenizer().decode(trained) == "82<|im_end|>"


def test_rows_from_an_environment() -> None:
    rows = load_rows(SFTDataConfig(env="arithmetic", env_args={"num_train_examples": 5, "num_eval_examples": 1}))
    assert len(rows) == 5
    prompt, completion = rows[0]
    a, b = prompt[-1]["content"].split("+")
    assert completion == [{"role": "assistant", "content": str(int(a) + int(b))}]


def test_rows_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [{"prompt": "hi", "completion": "there"},
            {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
             "completion": [{"role": "assistant", "content": "a"}]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    loaded = load_rows(SFTDataConfig(path=path))
    assert loaded[0] == ([{"role": "user", "content": "hi"}], [{"role": "assistant", "content": "there"}])
    assert loaded[1][0][0]["role"] == "system"


@pytest.mark.parametrize(("content", "message"), [
    ('{"prompt": "x"}\n', r"d.jsonl:1: not a \{prompt, completion\} row"),
    ('{"prompt": "x", "completion": "y"}\nnot json\n', "d.jsonl:2"),
    ('{"prompt": 3, "completion": "y"}\n', "expected a string or a list of messages"),
    ("\n", "has no rows"),
])
def test_bad_jsonl_rows(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(content)
    with pytest.raises(TrainerConfigError, match=message):
        load_rows(SFTDataConfig(path=path))


def test_data_source_must_be_exactly_one(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        SFTDataConfig()
    with pytest.raises(ValidationError, match="exactly one"):
        SFTDataConfig(env="arithmetic", path=tmp_path)
    with pytest.raises(TrainerConfigError, match="does not exist"):
        load_rows(SFTDataConfig(path=tmp_path / "missing.jsonl"))


def test_step_order_is_a_function_of_the_step() -> None:
    first_epoch = [i for step in range(5) for i in step_indices(10, 2, step, seed=0)]
    assert sorted(first_epoch) == list(range(10))  # each row once per epoch
    assert step_indices(10, 4, 2, seed=0) == step_indices(10, 4, 2, seed=0)
    assert step_indices(10, 4, 2, seed=0) != step_indices(10, 4, 2, seed=1)
    straddling = step_indices(10, 4, 2, seed=0)  # positions 8..11: end of epoch 0, start of epoch 1
    assert straddling[:2] == first_epoch[8:]
