"""Which API era an environment class is written for, read from what it overrides.

The two eras differ in a few hook signatures:

=====================  ======================================  ==============================
hook                   tuple era (0.1.x)                       State era (0.1.8-0.3.0)
=====================  ======================================  ==============================
``is_completed``       ``(messages, state, **kw) -> bool``     ``(state) -> bool`` / ``@vf.stop``
``env_response``       ``(messages, state) -> (msgs, state)``  ``(messages, state) -> msgs``
``rollout``            ``(client, model, prompt, ...)``        ``(input, client, model, ...)``
=====================  ======================================  ==============================

The SDK's own base hooks answer in the shape the subclass expects, so a
tuple-era ``tool_msgs, state = await super().env_response(messages, state)``
and a State-era ``msgs = await super().env_response(messages, state)`` both work.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any, Literal

Era = Literal["tuple", "state"]

_SDK_PREFIX = "verifiers."


def user_override(cls: type, name: str) -> Callable[..., Any] | None:
    """The first definition of ``name`` in ``cls``'s MRO that is not the SDK's own."""
    for klass in cls.__mro__:
        if name in vars(klass):
            if klass.__module__.startswith(_SDK_PREFIX):
                return None
            member = vars(klass)[name]
            return getattr(member, "__func__", member)
    return None


def _positional_names(func: Callable[..., Any]) -> list[str]:
    params = inspect.signature(func).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[1:] if names and names[0] in ("self", "cls") else names


def _returns_pair(func: Callable[..., Any]) -> bool:
    """Does ``func`` return a 2-tuple? Read from its annotation, else from its return statements."""
    annotation = inspect.signature(func).return_annotation
    if annotation is not inspect.Signature.empty:
        text = annotation if isinstance(annotation, str) else repr(annotation)
        return text.replace("typing.", "").lower().startswith("tuple")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False  # no source: decided at run time from the value returned
    return any(
        isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2
        for node in ast.walk(tree)
    )


@functools.cache
def code_era(cls: type) -> Era | None:
    """The era ``cls``'s own code names: a tuple-era shape of an override, or a hook or decorator only the State
    era has; ``None`` when it names none (a plain ``SingleTurnEnv``, a ``ToolEnv`` without overrides)."""
    is_completed = user_override(cls, "is_completed")
    if is_completed is not None and len(_positional_names(is_completed)) >= 2:
        return "tuple"
    rollout = user_override(cls, "rollout")
    if rollout is not None and _positional_names(rollout)[:1] in (["client"],):
        return "tuple"
    env_response = user_override(cls, "env_response")
    if env_response is not None and _returns_pair(env_response):
        return "tuple"
    if (is_completed is not None) or (rollout is not None) or _uses_state_era_decorators(cls):
        return "state"  # is_completed(state), rollout(input, ...), @vf.stop and kin exist only there
    return None


def _uses_state_era_decorators(cls: type) -> bool:
    """Whether a class of the user's marks a method with ``@vf.stop``, ``@vf.cleanup`` or their kin."""
    for klass in cls.__mro__:
        if klass.__module__.startswith(_SDK_PREFIX):
            continue
        for member in vars(klass).values():
            func = getattr(member, "__func__", member)
            if callable(func) and any(name.startswith("_vf_") for name in getattr(func, "__dict__", {})):
                return True
    return False


def detect_era(cls: type) -> Era:
    """The era ``cls`` is written in, read from its code alone; the State era unless an override says otherwise.

    :class:`~verifiers.envs.multiturn_env.MultiTurnEnv` also consults the package's declared requirement
    (:mod:`verifiers.rollout.declared_era`) when the code names no era.
    """
    return code_era(cls) or "state"


def tuple_style_is_completed(cls: type) -> bool:
    """Whether the class's ``is_completed`` takes ``(messages, state)``."""
    override = user_override(cls, "is_completed")
    return override is not None and len(_positional_names(override)) >= 2


def state_style_is_completed(cls: type) -> bool:
    """Whether the class overrides ``is_completed`` with the State era's ``(state)``."""
    override = user_override(cls, "is_completed")
    return override is not None and len(_positional_names(override)) < 2


__all__ = ["Era", "code_era", "detect_era", "user_override", "tuple_style_is_completed", "state_style_is_completed"]
