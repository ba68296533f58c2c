"""SFT data: prompt/completion rows, tokenised with the chat template, loss on the completion only.

Rows come from a JSONL file in the prompt/completion format (``prompt`` and ``completion``
each a list of chat messages, or a string for a one-message user/assistant turn), or from
an environment's training split through the SDK's public API: the row's ``prompt`` and
its ``answer`` as the assistant's reply. The completion's tokens are the full
conversation's tokens past the prompt's, which requires the template to render the prompt
as a prefix of the conversation; the tokens after the last end-of-turn (the template's
trailing newline) are never generated, so they do not train.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from transformers import PreTrainedTokenizerBase

import verifiers as vf
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.orchestrator.packing import Sample

Messages = list[dict[str, Any]]


class SFTDataConfig(BaseModel):
    """Where SFT examples come from and how many go into one optimizer step."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(None, description="Environment id whose training rows (prompt + answer) are the data.")
    env_args: dict[str, Any] = Field(default_factory=dict, description="Arguments for the environment's loader.")
    path: Path | None = Field(None, description="JSONL file of {prompt, completion} rows (instead of env).")
    batch_size: int = Field(32, gt=0, description="Examples per optimizer step (over all ranks).")
    seq_len: int = Field(2048, gt=0, description="Tokens per micro-batch; examples are packed up to this.")
    seed: int = Field(0, description="Shuffles the examples; the order is a function of the step and this seed.")

    @model_validator(mode="after")
    def _one_source(self) -> SFTDataConfig:
        if (self.env is None) == (self.path is None):
            raise ValueError("set exactly one of data.env and data.path")
        return self


def load_rows(config: SFTDataConfig) -> list[tuple[Messages, Messages]]:
    """``(prompt, completion)`` message lists from the configured source."""
    if config.path is not None:
        return _rows_from_jsonl(config.path)
    assert config.env is not None
    env = vf.load_environment(config.env, **config.env_args)
    dataset = env.get_dataset()
    return [(list(row["prompt"]), [{"role": "assistant", "content": str(row["answer"])}]) for row in dataset]


def _rows_from_jsonl(path: Path) -> list[tuple[Messages, Messages]]:
    if not path.is_file():
        raise TrainerConfigError(f"data.path {path} does not exist")
    rows: list[tuple[Messages, Messages]] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append((_messages(row["prompt"], "user"), _messages(row["completion"], "assistant")))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise TrainerConfigError(f"{path}:{number}: not a {{prompt, completion}} row ({e})") from None
    if not rows:
        raise TrainerConfigError(f"{path} has no rows")
    return rows


def _messages(value: Any, role: str) -> Messages:
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, list) and all(isinstance(m, Mapping) and "role" in m for m in value):
        return [dict(m) for m in value]
    raise TypeError(f"expected a string or a list of messages, got {type(value).__name__}")


def tokenize(tokenizer: PreTrainedTokenizerBase, prompt: Messages, completion: Messages) -> Sample:
    """One training sample: the conversation's tokens, trainable on the completion up to its last end-of-turn."""
    prompt_ids = _ids(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True))
    full_ids = _ids(tokenizer.apply_chat_template(prompt + completion, tokenize=True))
    if full_ids[: len(prompt_ids)] != prompt_ids:
        raise TrainerConfigError("the chat template does not render the prompt as a prefix of the conversation")
    trainable = [i >= len(prompt_ids) for i in range(len(full_ids))]
    eos = tokenizer.eos_token_id
    last_eos = max((i for i, t in enumerate(full_ids) if t == eos and trainable[i]), default=None)
    if last_eos is not None:
        trainable[last_eos + 1 :] = [False] * (len(full_ids) - last_eos - 1)
    return Sample(full_ids, trainable, [0.0] * len(full_ids), advantage=0.0)


def _ids(encoded: Any) -> list[int]:
    # transformers 5 returns a BatchEncoding here; older versions a plain list.
    if isinstance(encoded, Mapping):
        encoded = encoded["input_ids"]
    return [int(i) for i in encoded]


def step_indices(num_rows: int, batch_size: int, step: int, seed: int) -> list[int]:
    """Row indices of step ``step``'s batch: epochs of seeded permutations, read in order.

    A function of the step alone, so a resumed run sees exactly the batches it would have.
    """
    indices: list[int] = []
    start = step * batch_size
    for position in range(start, start + batch_size):
        epoch, offset = divmod(position, num_rows)
        indices.append(_permutation(num_rows, seed, epoch)[offset])
    return indices


_PERMUTATIONS: dict[tuple[int, int, int], list[int]] = {}


def _permutation(n: int, seed: int, epoch: int) -> list[int]:
    key = (n, seed, epoch)
    if key not in _PERMUTATIONS:
        order = list(range(n))
        random.Random(f"sft/{seed}/{epoch}").shuffle(order)
        _PERMUTATIONS.clear()  # one epoch at a time is all a run reads
        _PERMUTATIONS[key] = order
    return _PERMUTATIONS[key]


def step_samples(samples: Sequence[Sample], batch_size: int, step: int, seed: int) -> list[Sample]:
    """The samples of step ``step``."""
    return [samples[i] for i in step_indices(len(samples), batch_size, step, seed)]


__all__ = ["SFTDataConfig", "load_rows", "step_indices", "step_samples", "tokenize"]
