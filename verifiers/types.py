"""Public types, importable as ``verifiers.types`` (as public environments do).

Data that crosses a boundary (results files, trainer batches) is a pydantic
model; the rollout's working data (state, messages) are dicts for
compatibility, typed through :mod:`verifiers.state` and :mod:`verifiers.messages`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_role import ChatCompletionRole
from openai.types.chat.chat_completion_tool_param import ChatCompletionToolParam
from openai.types.completion import Completion
from openai.types.shared_params import FunctionDefinition, FunctionParameters
from pydantic import BaseModel, ConfigDict, Field

from verifiers.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from verifiers.state import State, Timing, TrajectoryStep, TrajectoryStepTokens
from verifiers.tools.schema import Tool

if TYPE_CHECKING:  # datasets is heavy to import; the alias only needs the name
    from datasets import Dataset

ChatMessage = ChatCompletionMessageParam
Messages = str | list[ChatMessage]
MessageType = Literal["chat", "completion"]
ModelResponse = Completion | ChatCompletion | None
Info = dict[str, Any]
SamplingArgs = dict[str, Any]
RewardFunc = Callable[..., float | Awaitable[float]]
GroupRewardFunc = Callable[..., list[float] | Awaitable[list[float]]]
DatasetBuilder = Callable[[], "Dataset"]
"""A callable that takes no arguments and returns the dataset; environments build it when first used."""
# The JSON schema type names (0.1.x's tool-schema helpers annotated with it).
JsonPrimitive = Literal["string", "number", "integer", "boolean", "array", "object"]


class RolloutInput(TypedDict, total=False):
    """One dataset row handed to ``rollout`` in the State era."""

    prompt: Messages
    answer: str
    task: str
    info: Info
    example_id: int


class GenerateInputs(BaseModel):
    """Tuple-era inputs to ``a_generate``: parallel lists."""

    prompt: list[Messages]
    answer: list[str] | None = None
    info: list[dict] | None = None
    task: list[str] | None = None
    completion: list[Messages] | None = None


class RolloutScore(BaseModel):
    reward: float
    metrics: dict[str, float] = Field(default_factory=dict)


class RolloutScores(BaseModel):
    reward: list[float]
    metrics: dict[str, list[float]] = Field(default_factory=dict)


class ProcessedOutputs(BaseModel):
    """Token-level training rows.

    One row per training sample. A rollout whose chat template rewrote earlier
    turns (e.g. stripped ``<think>`` blocks) cannot be one faithful sequence, so
    it becomes several rows; ``rollout_index`` maps each row back to its rollout.
    """

    prompt_ids: list[list[int]]
    prompt_mask: list[list[int]]
    completion_ids: list[list[int]]
    completion_mask: list[list[int]]
    completion_logprobs: list[list[float]]
    rewards: list[float]
    rollout_index: list[int] = Field(default_factory=list)


class RolloutOutput(BaseModel):
    """One line of ``results.jsonl``: a finished, scored rollout (its own keys are
    ``verifiers.eval.outputs.OUTPUT_KEYS``; ``state_columns`` add more, kept as extras).

    >>> RolloutOutput.model_validate_json(open("results.jsonl").readline()).reward  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="allow")

    example_id: int
    rollout_index: int = 0
    prompt: Any
    completion: Any
    answer: str = ""
    task: str = "default"
    info: dict[str, Any] = Field(default_factory=dict)
    reward: float = 0.0
    metrics: dict[str, float] = Field(default_factory=dict)
    timing: dict[str, float] = Field(default_factory=dict)
    is_completed: bool = True
    is_truncated: bool = False
    stop_condition: str | None = None
    error: str | None = None
    num_turns: int = 0
    advantage: float | None = None
    total_completion_tokens: int = 0
    scoring_errors: dict[str, str] = Field(default_factory=dict)
    tool_errors: int = 0


class GenerateMetadata(BaseModel):
    """``metadata.json`` of an evaluation run: what ran (``config``, model, sampling) and, once ``status`` is
    ``"complete"``, its summary; a run that stopped says ``"failed"`` and why in ``error``."""

    model_config = ConfigDict(extra="allow")

    config: dict[str, Any] = Field(default_factory=dict)
    status: str = "complete"
    error: str | None = None
    num_scored: int = 0
    num_masked: int = 0

    env_id: str = ""
    env_args: dict[str, Any] = Field(default_factory=dict)
    model: str = ""
    base_url: str = ""
    num_examples: int = 0
    rollouts_per_example: int = 1
    sampling_args: dict[str, Any] = Field(default_factory=dict)
    date: str = ""
    time_ms: float = 0.0
    avg_reward: float = 0.0
    std_reward: float = 0.0
    avg_metrics: dict[str, float] = Field(default_factory=dict)
    avg_error: float = 0.0
    error_counts: dict[str, int] = Field(default_factory=dict)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    pass_threshold: float = 0.5
    version_info: dict[str, Any] = Field(default_factory=dict)


class GenerateOutputs(dict):
    """Results of ``generate``: ``{"outputs": [...], "metadata": {...}}`` (State era).

    The tuple era read the same results as parallel lists (``results.reward``,
    ``results.completion``, ``results.metrics["name"]``); those read-only
    attributes are derived from ``outputs`` so either style works.
    """

    def __init__(self, outputs: list[dict[str, Any]], metadata: dict[str, Any], states: list[State]) -> None:
        super().__init__(outputs=outputs, metadata=metadata)
        self._states = states

    def _column(self, key: str) -> list[Any]:
        return [o.get(key) for o in self["outputs"]]

    @property
    def prompt(self) -> list[Any]:
        return self._column("prompt")

    @property
    def completion(self) -> list[Any]:
        return self._column("completion")

    @property
    def answer(self) -> list[str]:
        return self._column("answer")

    @property
    def task(self) -> list[str]:
        return self._column("task")

    @property
    def info(self) -> list[dict[str, Any]]:
        return self._column("info")

    @property
    def reward(self) -> list[float]:
        return self._column("reward")

    @property
    def state(self) -> list[State]:
        return self._states

    @property
    def metrics(self) -> dict[str, list[float]]:
        names = sorted({k for o in self["outputs"] for k in (o.get("metrics") or {})})
        return {n: [(o.get("metrics") or {}).get(n, 0.0) for o in self["outputs"]] for n in names}


class Endpoint(TypedDict):
    key: str
    url: str
    model: str


Endpoints = dict[str, Endpoint]

__all__ = [
    "AssistantMessage",
    "ChatCompletion",
    "ChatCompletionMessageToolCall",
    "ChatCompletionRole",
    "ChatCompletionToolParam",
    "ChatMessage",
    "Completion",
    "DatasetBuilder",
    "Endpoint",
    "Endpoints",
    "FunctionDefinition",
    "FunctionParameters",
    "GenerateInputs",
    "GenerateMetadata",
    "GenerateOutputs",
    "GroupRewardFunc",
    "Info",
    "JsonPrimitive",
    "Message",
    "MessageType",
    "Messages",
    "ModelResponse",
    "ProcessedOutputs",
    "RewardFunc",
    "RolloutInput",
    "RolloutOutput",
    "RolloutScore",
    "RolloutScores",
    "SamplingArgs",
    "State",
    "SystemMessage",
    "TextMessage",
    "Timing",
    "Tool",
    "ToolCall",
    "ToolMessage",
    "TrajectoryStep",
    "TrajectoryStepTokens",
    "UserMessage",
]
