"""SFT data: prompt/completion rows, tokenised with the chat template, loss on the completion only.

Rows come from a JSONL file in the prompt/completion format (``prompt`` and ``completion``
each a list of chat messages, or a string for a one-message user/assistant turn), or from
an environment's training split through the SDK's public API: the row's ``prompt`` and
its ``answer`` as the assistant's reply. Several environments (``data.envs``, the same
``[[envs]]`` entries ``vf-train rl`` mixes) give a mix whose shares follow their weights:
each environment's rows are repeated or cut to its share of the total row count, so a
warm start for an RL mix sees every environment as often as the mix will ask for it.
The completion's tokens are the full conversation's tokens past the prompt's, which
requires the template to render the prompt as a prefix of the conversation; the tokens
after the last end-of-turn (the template's trailing newline) are never generated, so
they do not train.

A completion may be a multi-turn transcript (assistant tool calls, ``tool`` replies, user
turns): only its assistant turns train, each from its first token to its end-of-turn; the
other messages are context, as the environment's tokens are in RL. A JSONL row may list the
tools its conversation offers (``"tools"``: OpenAI tool schemas, as an environment's
``oai_tools``), which the chat template renders as vLLM does for a request with those tools.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.orchestrator.env_mix import EnvConfig, load_env_mix
from trainer_adapter.orchestrator.packing import Sample

if TYPE_CHECKING:  # a type only: the config half of this module loads without transformers
    from transformers import PreTrainedTokenizerBase

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]]
Row = tuple[Messages, Messages] | tuple[Messages, Messages, Tools]
"""``(prompt, completion)``, or ``(prompt, completion, tools)`` for a conversation that offers tools."""


class SFTDataConfig(BaseModel):
    """Where SFT examples come from and how many go into one optimizer step."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(None, description="Environment id whose training rows (prompt + answer) are the data.")
    env_args: dict[str, Any] = Field(default_factory=dict, description="Arguments for the environment's loader.")
    path: Path | None = Field(None, description="JSONL file of {prompt, completion} rows (instead of env).")
    envs: list[EnvConfig] = Field(
        default_factory=list, description="Several environments mixed by weight (data.envs tables: id, args, weight, "
        "name, as vf-train rl's envs) instead of env: each one's share of the rows follows its weight.",
    )
    batch_size: int = Field(32, gt=0, description="Examples per optimizer step (over all ranks).")
    seq_len: int = Field(2048, gt=0, description="Tokens per micro-batch; examples are packed up to this.")
    seed: int = Field(0, description="Shuffles the examples; the order is a function of the step and this seed.")

    @model_validator(mode="after")
    def _one_source(self) -> SFTDataConfig:
        if sum((self.env is not None, self.path is not None, bool(self.envs))) != 1:
            raise ValueError("set exactly one of data.env, data.path and data.envs")
        if any(e.id is None for e in self.envs):
            raise ValueError("every entry of data.envs needs an id")
        return self


def load_rows(config: SFTDataConfig) -> list[Row]:
    """``(prompt, completion)`` message lists (and the tools, where a JSONL row lists them) from the configured
    source."""
    if config.path is not None:
        return _rows_from_jsonl(config.path)
    if config.envs:
        return _rows_from_mix(config.envs)
    assert config.env is not None
    env, _ = load_env_mix([EnvConfig(id=config.env, args=config.env_args)])
    return [_env_row(row) for row in env.get_dataset()]


def _env_row(row: Mapping[str, Any]) -> tuple[Messages, Messages]:
    return list(row["prompt"]), [{"role": "assistant", "content": str(row["answer"])}]


def _rows_from_mix(entries: Sequence[EnvConfig]) -> list[Row]:
    """The environments' training rows, each environment's count set to its weight's share of the total.

    The rows of one environment are taken in order and cycled when its share is larger than its
    dataset; the step order shuffles them afterwards.
    """
    env, weights = load_env_mix(entries)
    by_task: dict[str, list[tuple[Messages, Messages]]] = {}
    for row in env.get_dataset():
        by_task.setdefault(str(row.get("task") or "default"), []).append(_env_row(row))
    if weights is None:  # one entry: its rows as they are
        return [row for rows in by_task.values() for row in rows]
    empty = [name for name in weights if not by_task.get(name)]
    if empty:
        raise TrainerConfigError(f"data.envs: {empty} have no training rows to fine-tune on")
    total, weight_sum = sum(len(rows) for rows in by_task.values()), sum(weights.values())
    mixed: list[Row] = []
    for name, weight in weights.items():
        rows = by_task[name]
        count = max(1, round(total * weight / weight_sum))
        mixed.extend(rows[i % len(rows)] for i in range(count))
    return mixed


def _rows_from_jsonl(path: Path) -> list[Row]:
    if not path.is_file():
        raise TrainerConfigError(f"data.path {path} does not exist")
    rows: list[Row] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            prompt, completion = _messages(row["prompt"], "user"), _messages(row["completion"], "assistant")
            tools = _tools(row.get("tools"))
            rows.append((prompt, completion, tools) if tools else (prompt, completion))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise TrainerConfigError(f"{path}:{number}: not a {{prompt, completion}} row ({e})") from None
    if not rows:
        raise TrainerConfigError(f"{path} has no rows")
    return rows


def _tools(value: Any) -> Tools | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(t, Mapping) and "function" in t for t in value):
        return [dict(t) for t in value]
    raise TypeError("tools must be a list of OpenAI tool schemas ({\"type\": \"function\", \"function\": {...}})")


def _messages(value: Any, role: str) -> Messages:
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, list) and all(isinstance(m, Mapping) and "role" in m for m in value):
        return [dict(m) for m in value]
    raise TypeError(f"expected a string or a list of messages, got {type(value).__name__}")


def tokenize(
    tokenizer: PreTrainedTokenizerBase, prompt: Messages, completion: Messages, tools: Tools | None = None
) -> Sample:
    """One training sample: the conversation's tokens, trainable on each assistant turn of the completion.

    A turn trains from the first token after its generation prompt to its end-of-turn token: the tokens
    a model would generate there. Everything else (the prompt, tool replies, user turns, the template's
    newline after an end-of-turn) is context. Raises :class:`TrainerConfigError` when the template does
    not render each turn's history as a prefix of the conversation.
    """
    full_ids = _render(tokenizer, prompt + completion, tools, generation_prompt=False)
    trainable = [False] * len(full_ids)
    eos = tokenizer.eos_token_id
    for k, message in enumerate(completion):
        if message.get("role") != "assistant":
            continue
        start = len(_render(tokenizer, prompt + completion[:k], tools, generation_prompt=True))
        turn_ids = _render(tokenizer, prompt + completion[: k + 1], tools, generation_prompt=False)
        if full_ids[:start] != turn_ids[:start] or full_ids[: len(turn_ids)] != turn_ids:
            raise TrainerConfigError("the chat template does not render the prompt as a prefix of the conversation")
        end = next((i + 1 for i in range(len(turn_ids) - 1, start - 1, -1) if turn_ids[i] == eos), len(turn_ids))
        trainable[start:end] = [True] * (end - start)
    return Sample(full_ids, trainable, [0.0] * len(full_ids), advantage=0.0)


def _render(tokenizer: PreTrainedTokenizerBase, messages: Messages, tools: Tools | None,
            generation_prompt: bool) -> list[int]:  # fmt: skip
    kwargs: dict[str, Any] = {"tools": tools} if tools else {}
    return _ids(tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=True,
                                              **kwargs))  # fmt: skip


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
