"""verifiers: environments for LLM reinforcement learning.

An environment is a dataset, a rollout, and a rubric::

    import verifiers as vf

    env = vf.SingleTurnEnv(dataset=ds, rubric=vf.Rubric(funcs=[exact_match]))
    results = env.evaluate_sync(client, "my-model", num_examples=10, rollouts_per_example=4)

Names are imported on first use, so ``import verifiers`` stays fast and
optional dependencies (math-verify) load only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from verifiers.decorators import advantage, cleanup, metric, reward, setup, stop, teardown, update
from verifiers.errors import (
    EmptyModelResponseError,
    Error,
    InfraError,
    ModelError,
    OverlongPromptError,
    SandboxError,
    ToolCallError,
    ToolError,
    ToolParseError,
)
from verifiers.logs import log_level, quiet_verifiers, setup_logging
from verifiers.messages import AssistantMessage, SystemMessage, TextMessage, ToolCall, ToolMessage, UserMessage
from verifiers.state import State
from verifiers.version import __version__

_LAZY: dict[str, str] = {
    "Environment": "verifiers.envs.environment",
    "MultiTurnEnv": "verifiers.envs.multiturn_env",
    "SingleTurnEnv": "verifiers.envs.singleturn_env",
    "ToolEnv": "verifiers.envs.tool_env",
    "StatefulToolEnv": "verifiers.envs.stateful_tool_env",
    "EnvGroup": "verifiers.envs.env_group",
    "SandboxEnv": "verifiers.envs.sandbox_env",
    "CodeEnv": "verifiers.envs.code_env",
    "PythonEnv": "verifiers.envs.python_env",
    "TextArenaEnv": "verifiers.envs.textarena_env",
    "ReasoningGymEnv": "verifiers.envs.reasoninggym_env",
    "Rubric": "verifiers.rubrics.rubric",
    "RubricGroup": "verifiers.rubrics.rubric_group",
    "JudgeRubric": "verifiers.rubrics.judge_rubric",
    "MathRubric": "verifiers.rubrics.math_rubric",
    "ToolRubric": "verifiers.rubrics.tool_rubric",
    "LengthPenaltyRubric": "verifiers.rubrics.length_penalty",
    "add_length_instruction": "verifiers.rubrics.length_penalty",
    "Parser": "verifiers.parsers.parser",
    "ThinkParser": "verifiers.parsers.think_parser",
    "MaybeThinkParser": "verifiers.parsers.maybe_think_parser",
    "XMLParser": "verifiers.parsers.xml_parser",
    "load_environment": "verifiers.loading",
    "extract_boxed_answer": "verifiers.data.answers",
    "extract_hash_answer": "verifiers.data.answers",
    "BOXED_SYSTEM_PROMPT": "verifiers.data.answers",
    "THINK_BOXED_SYSTEM_PROMPT": "verifiers.data.answers",
    "load_example_dataset": "verifiers.data.examples",
    "maybe_await": "verifiers.awaitables",
    "Messages": "verifiers.types",
    "ChatMessage": "verifiers.types",
    "Info": "verifiers.types",
    "SamplingArgs": "verifiers.types",
    "RolloutInput": "verifiers.types",
    "RolloutScore": "verifiers.types",
    "RolloutScores": "verifiers.types",
    "GenerateOutputs": "verifiers.types",
    "GenerateInputs": "verifiers.types",
    "ProcessedOutputs": "verifiers.types",
    "RewardFunc": "verifiers.types",
    "DatasetBuilder": "verifiers.types",
    "print_prompt_completions_sample": "verifiers.logs",
    "Message": "verifiers.messages",
    "Tool": "verifiers.tools.schema",
    "OpenAIChatCompletionsClient": "verifiers.clients",
    "OpenAICompletionsClient": "verifiers.clients",
    "CoalescingClient": "verifiers.clients",
    "UsageError": "verifiers.errors",
    "JudgeError": "verifiers.rubrics.judge_rubric",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(
    [
        "__version__", "setup_logging", "log_level", "quiet_verifiers", "State",
        "stop", "cleanup", "teardown", "setup", "update", "metric", "reward", "advantage",
        "Error", "ModelError", "OverlongPromptError", "EmptyModelResponseError", "ToolError",
        "ToolParseError", "ToolCallError", "InfraError", "SandboxError",
        "UserMessage", "AssistantMessage", "SystemMessage", "ToolMessage", "TextMessage", "ToolCall",
        *_LAZY,
    ]
)
