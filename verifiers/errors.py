"""Every error the SDK raises or records, in one tree.

Callers catch by level; a rollout that fails records the error's class in
``state["error"]`` and the run goes on, so a trainer or ``vf-eval`` decides
what to drop by category::

    Error
    ├── ModelError                    the model API failed, after retries
    │   ├── OverlongPromptError       the prompt no longer fits the context
    │   ├── EmptyModelResponseError   the server answered with no choice
    │   └── MalformedModelResponseError  the server's 200 reply is not JSON, or not a completion
    ├── ToolError                     a tool call could not be carried out
    │   ├── ToolParseError            the model's call was malformed
    │   └── ToolCallError             the tool itself raised
    ├── InfraError                    the machinery around the model failed
    │   └── SandboxError
    ├── RewardFunctionError           a reward function raised (scored 0, counted)
    ├── EnvironmentNotFoundError      (also a ValueError, as in the original)
    ├── EnvironmentLoadError          (also a RuntimeError, as in the original)
    └── UsageError                    bad arguments from a user: CLI flags, env args
"""

from __future__ import annotations


class Error(Exception):
    """Base of every error this SDK raises on purpose."""


class ModelError(Error):
    """The model API failed after its retries were spent."""


class ReplyTooLargeError(ModelError):
    """The model API's reply was larger than the client allows (``max_reply_bytes``); it is not retried."""


class OverlongPromptError(ModelError):
    """The prompt is longer than the model's context; the rollout stops, not fails."""


class EmptyModelResponseError(ModelError):
    """The server returned a response without choices or content."""


class MalformedModelResponseError(ModelError):
    """The server answered 200 with a body that is not JSON, or not shaped like a completion.

    Recorded as that rollout's error (not retried: a server that sends garbage once usually does again).
    """


class ToolError(Error):
    """A tool call requested by the model could not be carried out."""


class ToolParseError(ToolError):
    """The model's tool call was malformed: unknown tool, bad JSON, wrong arguments."""


class ToolCallError(ToolError):
    """The tool function itself raised."""


class InfraError(Error):
    """Infrastructure around the model (sandboxes, servers) failed."""


class SandboxError(InfraError):
    """A sandbox could not be created, reached or used."""


class RewardFunctionError(Error):
    """A reward function raised; it is scored 0.0 and counted, never silent."""


class EnvironmentNotFoundError(Error, ValueError):
    """No installed module provides the requested environment id."""


class EnvironmentLoadError(Error, RuntimeError):
    """The environment module was found but ``load_environment`` failed."""


class UsageError(Error, ValueError):
    """Bad input from a user (CLI flag, env arg, JSON); the message says how to fix it."""


class MissingDependencyError(UsageError, ImportError):
    """An optional third-party package a feature needs is not installed; the message says what to install.

    Also an ``ImportError``, which is what the classic releases raised in its place.
    """


__all__ = [
    "Error",
    "ModelError",
    "OverlongPromptError",
    "EmptyModelResponseError",
    "MalformedModelResponseError",
    "ToolError",
    "ToolParseError",
    "ToolCallError",
    "InfraError",
    "SandboxError",
    "RewardFunctionError",
    "EnvironmentNotFoundError",
    "EnvironmentLoadError",
    "UsageError",
    "MissingDependencyError",
]
