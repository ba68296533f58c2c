"""An environment's tools, kept once and read in both eras' forms.

An environment keeps one list of tools, ``env.oai_tools``, in the OpenAI form the
tuple era reads and the API takes. :class:`ToolDefList` is ``env.tool_defs``: the
same list as provider-neutral :class:`~verifiers.tools.schema.Tool` defs (the State
era's form), whose edits land in ``oai_tools``.

A rollout's state carries both forms too (``state["oai_tools"]``, ``state["tool_defs"]``)
and code of either era may replace or grow either one between model calls.
:func:`remember_tools` and :func:`offered_tools` decide what each call offers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, SupportsIndex

from verifiers.messages import WriteThroughDict
from verifiers.tools.schema import Tool, to_oai_tool, to_tool_def

# The fields of a tool def that the OpenAI schema's ``function`` carries too.
_DEF_FIELDS = ("name", "description", "parameters", "strict")


class LinkedTool(WriteThroughDict, Tool):
    """One item of ``env.tool_defs``: a :class:`Tool` whose writes also land in the
    OpenAI schema it was read from, so ``env.tool_defs[0].strict = True`` sticks."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__(to_tool_def(schema))
        object.__setattr__(self, "_schema", schema)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._mirror(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._mirror(key)

    def _mirror(self, key: str) -> None:
        schema = self.__dict__.get("_schema")  # absent while a copy is being rebuilt
        if schema is None or key not in _DEF_FIELDS:
            return  # other keys are not part of the OpenAI schema (to_oai_tool drops them too)
        function = schema["function"] if isinstance(schema.get("function"), dict) else schema
        if self.get(key) is None:
            function.pop(key, None)  # an unset optional field ("strict") is left out, as to_oai_tool does
        else:
            function[key] = self[key]

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or a pickle is a plain def, detached from the environment's list.
        return (Tool, (dict(self),))


class ToolDefList(list):
    """``env.tool_defs``: the environment's ``oai_tools`` as :class:`LinkedTool` defs.

    A ``list`` (``json.dumps`` and ``isinstance(..., list)`` work) refilled from the
    owner's ``oai_tools`` before each read, whose every edit is written back there in
    place, so ``env.tool_defs.append(vf.Tool(...))`` and ``env.oai_tools.append({...})``
    both offer a tool. Membership, ``index`` and ``remove`` compare in the stored form, so
    a def equals the schema it came from whatever its optional fields.
    """

    def __init__(self, owner: Any) -> None:
        super().__init__()
        self._owner = owner
        self._refill()

    # -- the owner's list -------------------------------------------------------------------

    def _schemas(self) -> list[Any]:
        schemas = getattr(self._owner, "oai_tools", None)
        if schemas is None:  # tuple-era code may have set oai_tools = None
            schemas = []
            self._owner.oai_tools = schemas
        return schemas

    def _refill(self) -> None:
        list.__setitem__(self, slice(None), [LinkedTool(s) for s in self._schemas()])

    def _edit(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Apply one ``list`` edit to the defs, then write them back; a bad item changes nothing."""
        self._refill()
        try:
            result = getattr(list, method)(self, *args, **kwargs)
            schemas = self._stored_forms()
        except BaseException:
            self._refill()
            raise
        self._schemas()[:] = schemas  # in place: tuple-era code may hold env.oai_tools
        self._refill()
        return self if result is self else result

    def _stored_forms(self) -> list[dict[str, Any]]:
        """Each def as the owner stores it; an item already stored keeps its very schema dict
        (once: a repeated item gets its own, so an edit of one does not show in the other)."""
        mine = {id(s) for s in self._schemas()}
        forms: list[dict[str, Any]] = []
        for item in list.__iter__(self):
            schema = item.__dict__.get("_schema") if isinstance(item, LinkedTool) else None
            if schema is not None and id(schema) in mine:
                mine.discard(id(schema))
                forms.append(schema)
            else:
                forms.append(to_oai_tool(item))
        return forms

    # -- reads: always the owner's current tools --------------------------------------------

    def __getitem__(self, index: Any) -> Any:
        self._refill()
        found = list.__getitem__(self, index)
        return list(found) if isinstance(index, slice) else found

    def __iter__(self) -> Any:
        self._refill()
        return list.__iter__(self)

    def __len__(self) -> int:
        return len(self._schemas())

    def __contains__(self, value: object) -> bool:
        return _stored_form(value) in self._schemas()

    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex | None = None) -> int:
        schemas = self._schemas()
        form = _stored_form(value)
        end = len(schemas) if stop is None else stop
        if form is None:
            raise ValueError(f"{value!r} is not a tool definition in tool_defs")
        return schemas.index(form, start, end)

    def count(self, value: Any) -> int:
        return self._schemas().count(_stored_form(value))

    def __eq__(self, other: object) -> bool:
        for view in (self, other):
            if isinstance(view, ToolDefList):
                view._refill()
        return isinstance(other, list) and list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        self._refill()
        return list.__repr__(self)

    # -- edits: written back to the owner ---------------------------------------------------

    def __setitem__(self, index: Any, value: Any) -> None:
        self._edit("__setitem__", index, value)

    def __delitem__(self, index: Any) -> None:
        self._edit("__delitem__", index)

    # mypy wants += to take no more than + does, but list's own += takes any iterable where + takes a list;
    # typeshed's list.__iadd__ carries the same ignore
    def __iadd__(self, other: Iterable[Any]) -> ToolDefList:  # type: ignore[misc]
        return self._edit("__iadd__", other)

    def __imul__(self, times: SupportsIndex) -> ToolDefList:
        return self._edit("__imul__", times)

    def append(self, value: Any) -> None:
        self._edit("append", value)

    def extend(self, values: Iterable[Any]) -> None:
        self._edit("extend", values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._edit("insert", index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        return self._edit("pop", index)

    def remove(self, value: Any) -> None:
        self._edit("__delitem__", self.index(value))

    def clear(self) -> None:
        self._edit("clear")

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        self._edit("sort", key=key, reverse=reverse)

    def reverse(self) -> None:
        self._edit("reverse")

    # -- copies are plain lists of plain defs ----------------------------------------------

    def copy(self) -> list[Tool]:
        return [Tool(t) for t in self]

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Tool]:
        return copy.deepcopy(self.copy(), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.copy(),))  # never the environment it views


def _stored_form(value: Any) -> dict[str, Any] | None:
    """``value`` as ``oai_tools`` would hold it, or None when it is no tool definition."""
    try:
        return to_oai_tool(value)
    except (TypeError, ValueError):
        return None


# -- what one rollout's model calls offer ---------------------------------------------------

_TRACKER = "_vf_offered_tools"


@dataclass
class _Offered:
    """The state's two tool lists as last offered, and the OpenAI schemas that were sent."""

    oai: Any
    oai_seen: Any
    defs: Any
    defs_seen: Any
    tools: list[dict[str, Any]]

    def oai_changed(self, current: Any) -> bool:
        return current is not self.oai or current != self.oai_seen

    def defs_changed(self, current: Any) -> bool:
        return current is not self.defs or current != self.defs_seen


def remember_tools(state: dict[str, Any]) -> None:
    """Record a fresh state's tool lists (both already consistent), so that a later change to
    either is noticed; ``state["oai_tools"]`` must hold OpenAI schemas."""
    _remember(state, state.get("oai_tools") or [])


def offered_tools(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The OpenAI schemas a model call offers, from the state's tool lists.

    ``state["oai_tools"]`` replaced or edited since the last call (0.1.8-0.2.x envs set it in
    ``setup_state``) is offered, and ``state["tool_defs"]`` follows it; else ``state["tool_defs"]``
    replaced or edited (0.3.0) is offered, and ``state["oai_tools"]`` follows it; else the last
    call's schemas are offered again, unconverted. A state the SDK did not make offers its
    ``tool_defs`` (0.3.0) when it has them, else its ``oai_tools``.
    """
    tracker = _tracker(state)
    if tracker is not None and not tracker.oai_changed(state.get("oai_tools")):
        if not tracker.defs_changed(state.get("tool_defs")):
            return tracker.tools
        return _from_defs(state)
    if tracker is None and state.get("tool_defs") is not None:
        return _from_defs(state)
    return _from_oai(state)


def _from_oai(state: dict[str, Any]) -> list[dict[str, Any]]:
    tools = [to_oai_tool(t) for t in state.get("oai_tools") or []]
    state["tool_defs"] = [to_tool_def(t) for t in tools]  # the State era's view of what is offered
    _remember(state, tools)
    return tools


def _from_defs(state: dict[str, Any]) -> list[dict[str, Any]]:
    tools = [to_oai_tool(t) for t in state.get("tool_defs") or []]
    state["oai_tools"] = tools  # what was offered, in OpenAI form, for code that renders the conversation
    _remember(state, tools)
    return tools


def _remember(state: dict[str, Any], tools: list[dict[str, Any]]) -> None:
    oai, defs = state.get("oai_tools"), state.get("tool_defs")
    offered = _Offered(oai=oai, oai_seen=copy.deepcopy(oai), defs=defs, defs_seen=copy.deepcopy(defs), tools=tools)
    try:
        setattr(state, _TRACKER, offered)  # an attribute, not a key: it must not reach outputs
    except AttributeError:
        pass  # a plain dict: each call reads the state afresh


def _tracker(state: dict[str, Any]) -> _Offered | None:
    found = getattr(state, _TRACKER, None)
    return found if isinstance(found, _Offered) else None


__all__ = ["LinkedTool", "ToolDefList", "offered_tools", "remember_tools"]
