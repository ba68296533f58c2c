"""Calling reward functions with the arguments they ask for, by parameter name.

A reward function declares what it needs (``def f(completion, answer)``) and
receives only that; one with ``**kwargs`` receives everything available. A
function is a *group* function when it asks for plural names (``completions``,
``states``, ...) or is annotated to return a ``list``: it is called once per
group of rollouts of one example and returns one score per rollout.

>>> def exact(completion, answer):
...     return completion == answer
>>> select_arguments(exact, {"completion": "4", "answer": "4", "state": {}})
{'completion': '4', 'answer': '4'}
>>> is_group_func(exact), is_group_func(lambda completions: [1.0] * len(completions))
(False, True)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin

#: Per-rollout names and the plural names a group function receives instead.
GROUP_PARAMETERS: dict[str, str] = {
    "prompt": "prompts",
    "completion": "completions",
    "answer": "answers",
    "state": "states",
    "task": "tasks",
    "info": "infos",
}

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def func_name(func: Callable[..., Any]) -> str:
    """The name a reward function's score is reported under (its ``__name__``)."""
    name = getattr(func, "__name__", None) or getattr(getattr(func, "func", None), "__name__", None)
    return name or type(func).__name__


def ensure_reward_func(func: Any) -> None:
    """Raise ``TypeError`` unless ``func`` is a callable whose parameters can be read."""
    if not callable(func):
        raise TypeError(f"reward functions must be callable, got {type(func).__name__}: {func!r}")
    try:
        inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"reward function {func_name(func)!r} has no readable signature, so its arguments "
            f"cannot be chosen by name; wrap it in a def with named parameters ({exc})"
        ) from exc


def is_group_func(func: Callable[..., Any]) -> bool:
    """Whether ``func`` scores a whole group: plural parameters or a ``list`` return annotation."""
    signature = inspect.signature(func)
    if set(signature.parameters) & set(GROUP_PARAMETERS.values()):
        return True
    returns = signature.return_annotation
    if isinstance(returns, str):  # postponed annotations (``from __future__ import annotations``)
        return returns.split("[", 1)[0].strip() in {"list", "List", "typing.List"}
    return returns is list or get_origin(returns) is list


def select_arguments(func: Callable[..., Any], available: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``available`` that ``func`` accepts (all of it when it takes ``**kwargs``)."""
    parameters = inspect.signature(func).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(available)
    wanted = {p.name for p in parameters if p.kind in _KEYWORD_KINDS}
    return {name: value for name, value in available.items() if name in wanted}


@dataclass
class RolloutArguments:
    """What one rollout offers its reward functions, before a rubric adds its own objects."""

    fields: dict[str, Any]
    overrides: dict[str, Any] = field(default_factory=dict)  # call kwargs: they beat class objects
    state: MutableMapping[str, Any] | None = None

    @classmethod
    def from_state(cls, state: MutableMapping[str, Any], overrides: dict[str, Any] | None = None) -> RolloutArguments:
        """State era: the dataset row (``state["input"]``), then the state's own view of it, then ``state``."""
        row = state.get("input")
        fields = dict(row) if isinstance(row, Mapping) else {}
        defaults: dict[str, Any] = {
            "prompt": None, "completion": None, "answer": "", "task": "default", "info": {}, "example_id": None
        }
        for key, default in defaults.items():
            value = state.get(key)
            fields[key] = value if value is not None else fields.get(key, default)
        fields["state"] = state
        return cls(fields, dict(overrides or {}), state)

    def with_objects(self, class_objects: Mapping[str, Any]) -> dict[str, Any]:
        """Everything a per-rollout function may ask for, given a rubric's class objects."""
        return {**self.fields, **class_objects, **self.overrides}


def group_arguments(rollouts: Sequence[RolloutArguments], class_objects: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a group function may ask for: plural lists (``completions``, ...) and class objects."""
    arguments = dict(class_objects)
    for singular, plural in GROUP_PARAMETERS.items():
        arguments[plural] = [r.fields.get(singular) for r in rollouts]
    return arguments


__all__ = [
    "GROUP_PARAMETERS",
    "RolloutArguments",
    "ensure_reward_func",
    "func_name",
    "group_arguments",
    "is_group_func",
    "select_arguments",
]
