"""Lifecycle decorators of the State era: ``@vf.stop``, ``@vf.cleanup``, ``@vf.teardown``.

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
``state["stop_condition"]`` to its method name.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])

_STOP = "_vf_stop_priority"
_CLEANUP = "_vf_cleanup_priority"
_TEARDOWN = "_vf_teardown_priority"


def _marker(attr: str, name: str):
    @overload
    def decorate(func: F) -> F: ...
    @overload
    def decorate(func: None = None, *, priority: int = 0) -> Callable[[F], F]: ...

    def decorate(func: F | None = None, *, priority: int = 0) -> Any:
        def mark(f: F) -> F:
            setattr(f, attr, priority)
            return f

        return mark(func) if func is not None else mark

    decorate.__name__ = name
    decorate.__doc__ = f"Mark a method as a {name} hook (bare or with ``priority=``; higher runs first)."
    return decorate


stop = _marker(_STOP, "stop")
cleanup = _marker(_CLEANUP, "cleanup")
teardown = _marker(_TEARDOWN, "teardown")


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
    return _discover(obj, _STOP)


def cleanup_handlers(obj: object) -> list[Callable[..., Any]]:
    return _discover(obj, _CLEANUP)


def teardown_handlers(obj: object) -> list[Callable[..., Any]]:
    return _discover(obj, _TEARDOWN)


__all__ = ["stop", "cleanup", "teardown", "stop_conditions", "cleanup_handlers", "teardown_handlers"]
