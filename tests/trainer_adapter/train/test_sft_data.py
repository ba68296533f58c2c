"""SFT rows, tokenisation with completion-only loss, and the step-determined data order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.orchestrator.env_mix import EnvConfig
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
    with pytest.raises(ValidationError, match="exactly one"):
        SFTDataConfig(env="arithmetic", envs=[EnvConfig(id="reverse-text")])
    with pytest.raises(TrainerConfigError, match="does not exist"):
        load_rows(SFTDataConfig(path=tmp_path / "missing.jsonl"))


def test_step_order_is_a_function_of_the_step() -> None:
    first_epoch = [i for step in range(5) for i in step_indices(10, 2, step, seed=0)]
    assert sorted(first_epoch) == list(range(10))  # each row once per epoch
    assert step_indices(10, 4, 2, seed=0) == step_indices(10, 4, 2, seed=0)
    assert step_indices(10, 4, 2, seed=0) != step_indices(10, 4, 2, seed=1)
    straddling = step_indices(10, 4, 2, seed=0)  # positions 8..11: end of epoch 0, start of epoch 1
    assert straddling[:2] == first_epoch[8:]


def _mix(arithmetic: float, reverse: float, **arithmetic_args: int) -> SFTDataConfig:
    args = {"num_train_examples": 60, "num_eval_examples": 1}
    return SFTDataConfig(envs=[EnvConfig(id="arithmetic", args=args | arithmetic_args, weight=arithmetic),
                               EnvConfig(id="reverse-text", args={"num_train_examples": 20, "num_eval_examples": 1},
                                         weight=reverse)])


def _is_sum(row: tuple[list[dict], list[dict]]) -> bool:
    return "+" in row[0][-1]["content"]


@pytest.mark.parametrize(("arithmetic", "reverse", "sums"), [(1.0, 1.0, 40), (3.0, 1.0, 60), (1.0, 3.0, 20)])
def test_a_mix_gives_each_environment_its_weights_share(arithmetic: float, reverse: float, sums: int) -> None:
    rows = load_rows(_mix(arithmetic, reverse))
    assert len(rows) == 80  # the datasets' total, whatever the weights
    assert sum(map(_is_sum, rows)) == sums
    reversals = [r for r in rows if not _is_sum(r)]
    prompt, completion = reversals[0]
    assert prompt[0]["role"] == "system"  # each environment's own prompt format
    assert completion[0]["content"] == prompt[-1]["content"][::-1]
    # a share larger than the dataset repeats its rows evenly; a smaller one takes distinct rows
    counts = {str(r): rows.count(r) for r in reversals}
    assert max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.parametrize(("entries", "error", "message"), [
    ([EnvConfig(id="arithmetic"), EnvConfig(id="no-such-env-here")], TrainerConfigError, r"envs.1 .*Could not import"),
    ([EnvConfig(id="arithmetic"), EnvConfig(id="arithmetic")], TrainerConfigError, "unique"),
    ([EnvConfig(id="arithmetic", args={"num_train_examples": 0, "num_eval_examples": 1}), EnvConfig(id="reverse-text")],
     TrainerConfigError, r"envs.0 .*has no training dataset"),
])
def test_bad_mixes_are_refused(entries: list[EnvConfig], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        load_rows(SFTDataConfig(envs=entries))


def test_mix_entries_are_checked_by_the_config() -> None:
    with pytest.raises(ValidationError, match="needs an id"):
        SFTDataConfig(envs=[EnvConfig()])
    with pytest.raises(ValidationError, match="greater than 0"):
        SFTDataConfig.model_validate({"envs": [{"id": "arithmetic", "weight": -1}]})


# -- multi-turn transcripts with tools ---------------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "multiply", "description": "Multiply two integers.",
                                           "parameters": {"type": "object", "properties": {}}}}]
TRANSCRIPT = [
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "multiply", "arguments": '{"a": 12, "b": 34}'}}]},
    {"role": "tool", "content": "408", "tool_call_id": "c"},
    {"role": "assistant", "content": "408"},
]


def test_only_assistant_turns_of_a_transcript_train() -> None:
    tokenizer, decode = build_tokenizer(), ByteTokenizer().decode
    sample = tokenize(tokenizer, [{"role": "user", "content": "12*34"}], TRANSCRIPT, TOOLS)
    text = decode(sample.token_ids)
    # the tools are listed in the system turn
    assert text.startswith("<|im_start|>system\n# Tools") and "\nmultiply() - Multiply two integers.\n" in text
    trained = decode([t for t, m in zip(sample.token_ids, sample.loss_mask) if m])
    assert trained == ('<tool_call>\n{"name": "multiply", "arguments": {"a": 12, "b": 34}}\n</tool_call><|im_end|>'
                       '408<|im_end|>')
    # the tool's reply and the headers around it are context only
    untrained = decode([t for t, m in zip(sample.token_ids, sample.loss_mask) if not m])
    assert "<tool_response>\n408\n</tool_response>" in untrained and untrained.endswith("<|im_start|>assistant\n\n")


def test_jsonl_rows_may_list_their_tools(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "12*34", "completion": TRANSCRIPT, "tools": TOOLS}) + "\n"
                    + json.dumps({"prompt": "hi", "completion": "there"}) + "\n")
    with_tools, plain = load_rows(SFTDataConfig(path=path))
    assert with_tools == ([{"role": "user", "content": "12*34"}], TRANSCRIPT, TOOLS)
    assert len(plain) == 2


@pytest.mark.parametrize("tools", ['"multiply"', '[{"name": "multiply"}]', "[3]"])
def test_bad_tools_in_a_row_are_rejected(tmp_path: Path, tools: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(f'{{"prompt": "x", "completion": "y", "tools": {tools}}}\n')
    with pytest.raises(TrainerConfigError, match=r"d.jsonl:1: .*tools must be a list of OpenAI tool schemas"):
        load_rows(SFTDataConfig(path=path))
