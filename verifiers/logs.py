"""The SDK's logging setup, and a console view of sample rollouts.

Everything the SDK logs goes to the ``verifiers`` logger (and its children)::

    vf.setup_logging("INFO")            # or set VF_LOG_LEVEL
    with vf.log_level("DEBUG"):          # louder for a while
        ...
    vf.print_prompt_completions_sample(prompts, completions, rewards, step=0)
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

LOGGER_NAME = "verifiers"
_DEFAULT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: str | None = None, log_format: str | None = None, date_format: str | None = None) -> None:
    """Log the SDK's messages to stderr at ``level`` (default WARNING, or ``VF_LOG_LEVEL``).

    ``log_format`` and ``date_format`` are :class:`logging.Formatter` formats. A
    second call changes the level and format; it never adds a second handler.
    """
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel((level or os.getenv("VF_LOG_LEVEL") or "WARNING").upper())
    formatter = logging.Formatter(log_format or _DEFAULT_FORMAT, datefmt=date_format)
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler())
    for handler in logger.handlers:
        handler.setFormatter(formatter)


@contextmanager
def log_level(level: str | int) -> Iterator[None]:
    """Set the ``verifiers`` logger to ``level`` inside the ``with`` block, then restore it."""
    logger = logging.getLogger(LOGGER_NAME)
    previous = logger.level
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def quiet_verifiers() -> Any:
    """A ``with`` block in which the SDK logs only warnings and errors."""
    return log_level("WARNING")


def print_prompt_completions_sample(
    prompts: Sequence[Any], completions: Sequence[Any], *args: Any, num_samples: int = 1, **kwargs: Any
) -> None:
    """Print the first ``num_samples`` rollouts to the console: each one's reward, prompt and completion.

    Takes either era's arguments: ``(prompts, completions, rewards, step, num_samples=1)``
    (0.1.x) or ``(prompts, completions, errors, rewards, step, num_samples=1)`` (0.3.0),
    positionally or by keyword. A rollout's error, when given, is shown under its completion.
    """
    errors, rewards, step, num_samples = _sample_arguments(args, kwargs, num_samples)
    from rich.console import Console

    count = min(num_samples, len(prompts))
    console = Console()
    console.rule(f"Step {step}: {count} of {len(prompts)} rollouts", characters="=", align="left")
    for i in range(count):
        reward = rewards[i] if i < len(rewards) else 0.0  # rewards may lag behind the rollouts
        error = errors[i] if errors is not None and i < len(errors) else None
        console.print(rollout_view(i + 1, reward, render_messages(prompts[i]), render_messages(completions[i]), error))


def rollout_view(number: int, reward: float, prompt: str, completion: str, error: Any) -> Any:
    """One rollout for a rich console: a heading with its number and reward, then its prompt, completion and
    error, indented. Every text goes in as ``rich.text.Text``, so model output is never read as markup."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text  # model output goes in as Text: never read as rich markup

    parts: list[Any] = [Text.assemble((f"#{number}", "bold"), "  reward ", (f"{reward:.2f}", "bold magenta"))]
    for label, body, style in (("prompt", prompt, "dim"), ("completion", completion, "")):
        parts.append(Text(f"  {label}", style="underline"))
        parts.append(Padding(Text(body, style=style), (0, 0, 0, 4)))
    if error is not None:  # under the completion it cut short
        parts.append(Padding(Text(f"error: {error}", style="red"), (1, 0, 0, 4)))
    return Group(*parts, Text(""))


def _sample_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], num_samples: int
) -> tuple[Sequence[Any] | None, Sequence[float], Any, int]:
    """``(errors, rewards, step, num_samples)`` from either era's call."""
    # 0.3.0 put `errors` before `rewards`: its call has a sequence where 0.1.x has the step.
    state_era = (
        "errors" in kwargs
        or (len(args) >= 2 and _is_sequence(args[1]))
        or (len(args) == 1 and "rewards" in kwargs)
    )
    names = ("errors", "rewards", "step", "num_samples") if state_era else ("rewards", "step", "num_samples")
    if len(args) > len(names):
        raise TypeError(f"print_prompt_completions_sample takes at most {2 + len(names)} positional arguments")
    values = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names or name in values:
            raise TypeError(f"print_prompt_completions_sample got an unexpected or repeated argument {name!r}")
        values[name] = value
    missing = [name for name in names[:-1] if name not in values]
    if missing:
        raise TypeError(f"print_prompt_completions_sample is missing {missing}")
    return values.get("errors"), values["rewards"], values["step"], values.get("num_samples", num_samples)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def render_messages(messages: Any) -> str:
    """A prompt or completion as text: the string itself, or ``role: content`` per message."""
    if isinstance(messages, str):
        return messages
    from verifiers.messages import to_plain

    blocks = []
    for message in to_plain(list(messages)):
        text = f"{message.get('role', '')}: {message.get('content') or ''}"
        for call in message.get("tool_calls") or []:
            function = call.get("function", call)
            arguments = function.get("arguments", {})
            arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
            text += f"\n[tool call] {function.get('name', '')}({arguments})"
        blocks.append(text)
    return "\n\n".join(blocks)


__all__ = ["LOGGER_NAME", "log_level", "print_prompt_completions_sample", "quiet_verifiers", "render_messages",
           "rollout_view", "setup_logging"]
