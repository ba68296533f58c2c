"""Lifecycle decorators of the State era: ``@vf.stop``, ``@vf.cleanup``, ``@vf.teardown``, and markers.

Methods are marked, not registered: an environment discovers its marked
methods on its class (including inherited ones) when it is built, so a
subclass adds a stop condition just by defining a decorated method::

    class Game(vf.MultiTurnEnv):
        @vf.stop(priority=10)
        async def solved(self, state) -> bool:
            return state.get("solved", False)

        @vf.cleanup
        async def close_board(self, state) -> None: ...

Stop conditions run highest priority first; the first that fires sets
``state["stop_condition"]`` to its method name. Cleanup handlers run once per
rollout whatever their ``stage=`` (as in 0.3.0, whose classic environments
read only the mark), teardown handlers once per environment.

``@vf.setup``, ``@vf.update``, ``@vf.metric``, ``@vf.reward`` and
``@vf.advantage`` exist in 0.3.0 for its separate ``verifiers.v1`` API; its
classic environments, like these, only mark the method and never call it.
They are accepted so that environments defining such methods import and run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, overload

F = TypeVar("F", bound=Callable[..., Any])

Stage = Literal["rollout", "group"]
"""When a staged hook applies: to each rollout, or to each group of rollouts of one example."""

_STOP = "_vf_stop_priority"
_CLEANUP = "_vf_cleanup_priority"
_TEARDOWN = "_vf_teardown_priority"


def _marking(kind: str, func: Any, marks: dict[str, Any]) -> Any:
    """Set ``marks`` on ``func`` (bare decorator use) or return the decorator (called with arguments)."""

    def mark(f: F) -> F:
        if not callable(f):
            # e.g. @vf.stop(10): the priority landed where the function goes
            raise TypeError(f"@vf.{kind} decorates a function, got {f!r}; pass options by keyword, "
                            f"e.g. @vf.{kind}(priority=10)")
        for attr, value in marks.items():
            setattr(f, attr, value)
        return f

    return mark(func) if func is not None else mark


def _priority(kind: str, priority: Any) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"@vf.{kind}: priority must be an int, got {priority!r}")
    return priority


def _stage(kind: str, stage: Any) -> Stage:
    if stage not in get_args(Stage):
        raise ValueError(f"@vf.{kind}: stage must be one of {list(get_args(Stage))}, got {stage!r}")
    return stage


def _priority_marks(kind: str, priority: Any) -> dict[str, Any]:
    return {f"_vf_{kind}_priority": _priority(kind, priority)}


def _staged_marks(kind: str, priority: Any, stage: Any) -> dict[str, Any]:
    return {**_priority_marks(kind, priority), f"_vf_{kind}_stage": _stage(kind, stage)}


# Each decorator has two forms, told apart by ``func``: bare (``@vf.stop``) marks and returns the function, called
# (``@vf.stop(priority=1)``) returns the marking decorator. The overloads give each form its own return type.
@overload
def stop(func: F, priority: int = 0) -> F: ...
@overload
def stop(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def stop(func: F | None = None, priority: int = 0) -> F | Callable[[F], F]:
    """Have a method ``(state) -> bool`` end the rollout once it returns true (bare, or ``priority=``:
    higher is checked earlier)."""
    return _marking("stop", func, _priority_marks("stop", priority))


@overload
def cleanup(func: F, priority: int = 0, stage: Stage = "rollout") -> F: ...
@overload
def cleanup(func: None = None, priority: int = 0, stage: Stage = "rollout") -> Callable[[F], F]: ...
def cleanup(func: F | None = None, priority: int = 0, stage: Stage = "rollout") -> F | Callable[[F], F]:
    """Have a method ``(state)`` run after every rollout finishes (``priority=``: higher earlier;
    ``stage=``: see the module docstring)."""
    return _marking("cleanup", func, _staged_marks("cleanup", priority, stage))


@overload
def teardown(func: F, priority: int = 0) -> F: ...
@overload
def teardown(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def teardown(func: F | None = None, priority: int = 0) -> F | Callable[[F], F]:
    """Have a method ``()`` run a single time as the environment shuts down (``priority=``: higher earlier)."""
    return _marking("teardown", func, _priority_marks("teardown", priority))


@overload
def setup(func: F, priority: int = 0) -> F: ...
@overload
def setup(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def setup(func: F | None = None, priority: int = 0) -> F | Callable[[F], F]:
    """Tag a method that would prepare each rollout's state. Tagged only: nothing here calls it."""
    return _marking("setup", func, _priority_marks("setup", priority))


@overload
def update(func: F, priority: int = 0, stage: Stage = "rollout") -> F: ...
@overload
def update(func: None = None, priority: int = 0, stage: Stage = "rollout") -> Callable[[F], F]: ...
def update(func: F | None = None, priority: int = 0, stage: Stage = "rollout") -> F | Callable[[F], F]:
    """Tag a method that would change the state after a rollout (or a group). Tagged only: never called."""
    return _marking("update", func, _staged_marks("update", priority, stage))


@overload
def metric(func: F, priority: int = 0, stage: Stage = "rollout") -> F: ...
@overload
def metric(func: None = None, priority: int = 0, stage: Stage = "rollout") -> Callable[[F], F]: ...
def metric(func: F | None = None, priority: int = 0, stage: Stage = "rollout") -> F | Callable[[F], F]:
    """Tag a method that would measure a rollout (or a group) without scoring it. Tagged only: to
    have a number reported, register the function with ``rubric.add_metric``."""
    return _marking("metric", func, _staged_marks("metric", priority, stage))


@overload
def reward(func: F, weight: float = 1.0, priority: int = 0, stage: Stage = "rollout") -> F: ...
@overload
def reward(func: None = None, weight: float = 1.0, priority: int = 0, stage: Stage = "rollout") -> Callable[[F], F]: ...
def reward(
    func: F | None = None, weight: float = 1.0, priority: int = 0, stage: Stage = "rollout"
) -> F | Callable[[F], F]:
    """Tag a method that would score a rollout (or a group), counting ``weight`` times. Tagged only:
    to have it scored, register the function with ``rubric.add_reward_func``."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise TypeError(f"@vf.reward: weight must be a number, got {weight!r}")
    marks = {**_staged_marks("reward", priority, stage), "_vf_reward_weight": float(weight)}
    return _marking("reward", func, marks)


@overload
def advantage(func: F, priority: int = 0) -> F: ...
@overload
def advantage(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def advantage(func: F | None = None, priority: int = 0) -> F | Callable[[F], F]:
    """Tag a method that would turn one group's rewards into advantages. Tagged only: never called."""
    return _marking("advantage", func, {**_priority_marks("advantage", priority), "_vf_advantage_stage": "group"})


def _discover(obj: object, attr: str) -> list[Callable[..., Any]]:
    """Bound methods of ``obj`` carrying ``attr``, highest priority first, then by name."""
    found: list[tuple[int, str, Callable[..., Any]]] = []
    seen: set[str] = set()
    for klass in type(obj).__mro__:
        for name, member in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            func = getattr(member, "__func__", member)
            if callable(func) and hasattr(func, attr):
                found.append((getattr(func, attr), name, getattr(obj, name)))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [method for _, _, method in found]


def stop_conditions(obj: object) -> list[Callable[..., Any]]:
    """``obj``'s ``@vf.stop`` methods, in the order they are checked."""
    return _discover(obj, _STOP)


def cleanup_handlers(obj: object) -> list[Callable[..., Any]]:
    """``obj``'s ``@vf.cleanup`` methods, in the order they run."""
    return _discover(obj, _CLEANUP)


def teardown_handlers(obj: object) -> list[Callable[..., Any]]:
    """``obj``'s ``@vf.teardown`` methods, in the order they run."""
    return _discover(obj, _TEARDOWN)


__all__ = [
    "Stage",
    "advantage",
    "cleanup",
    "cleanup_handlers",
    "metric",
    "reward",
    "setup",
    "stop",
    "stop_conditions",
    "teardown",
    "teardown_handlers",
    "update",
]
