"""``MultiTurnEnv``: the one rollout loop of the SDK.

Every environment's rollout runs here: model turn, stop check, environment
turn, repeat. Subclasses fill hooks (``env_response``, ``setup_state``,
``@vf.stop`` conditions, ``@vf.cleanup`` handlers) and never the loop.

The loop is the State era's (stop? → model → [stop? → env → model]…) and is
final: where an environment of the tuple era (0.1.x, see :mod:`verifiers.rollout.era`)
is driven differently (a second stop check after each environment turn, because
rewards can depend on it; ``is_completed(messages, state)``; ``max_turns`` counting
``state["turn"]``), the loop asks the environment's
:class:`~verifiers.rollout.conventions.Conventions`, which :mod:`verifiers.compat`
chooses when the environment is built. This module is the turn loop's one seam
with :mod:`verifiers.compat`.

A State-era class that overrides one of the trajectory hooks
(``get_prompt_messages``, ``add_model_response``, ``add_trajectory_step``,
``render_completion``) — usually to show the model a non-linear history — gets
the same order driven through those hooks, and its completion rendered from the
trajectory at the end, as in verifiers 0.3.
"""

from __future__ import annotations

import abc
import asyncio
import copy
import functools
import logging
import time
from typing import Any, final

from verifiers.awaitables import maybe_await
from verifiers.compat.calls import is_tuple_rollout_call, reply_messages, tuple_rollout
from verifiers.compat.turns import conventions_for
from verifiers.decorators import cleanup_handlers, stop, stop_conditions
from verifiers.envs.environment import Environment
from verifiers.envs.tool_defs import remember_tools
from verifiers.errors import Error, OverlongPromptError
from verifiers.messages import to_message, to_messages
from verifiers.parsers.parser import Parser
from verifiers.rollout.declared_era import builder_era
from verifiers.rollout.era import code_era, user_override
from verifiers.rollout.response import parse_response
from verifiers.state import State, TrajectoryStep
from verifiers.tools.schema import to_oai_tool, to_tool_def

logger = logging.getLogger("verifiers.rollout")

_TRAJECTORY_HOOKS = ("get_prompt_messages", "add_model_response", "add_trajectory_step", "render_completion")


class MultiTurnEnv(Environment):
    """An environment where the model and the environment take turns.

    Args:
        max_turns: stop after this many model turns (``-1``: no limit).
        max_total_completion_tokens: stop once the model has produced this many tokens (``-1``: no limit).
        timeout_seconds: wall-clock budget of one rollout; when spent, the rollout records the error and stops.

    Example::

        class Guess(vf.MultiTurnEnv):
            async def env_response(self, messages, state):
                return [vf.UserMessage(content="higher")]

            @vf.stop
            async def guessed(self, state) -> bool:
                return "42" in state["trajectory"][-1]["completion"][-1]["content"]
    """

    def __init__(self, max_turns: int = -1, max_total_completion_tokens: int = -1,
                 timeout_seconds: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_turns = max_turns
        self.max_total_completion_tokens = max_total_completion_tokens
        self.timeout_seconds = timeout_seconds
        # The code's own shape first; when it names no era, what its package declares (verifiers<0.1.8: tuple).
        self.era = code_era(type(self)) or builder_era(type(self)) or "state"
        self.conventions = conventions_for(type(self), self.era)
        self._teach_era()
        self._hooked = self.conventions.follows_trajectory_hooks and any(
            user_override(type(self), h) for h in _TRAJECTORY_HOOKS)
        self._stop_conditions = stop_conditions(self)
        self._cleanup_handlers = cleanup_handlers(self)

    @property
    def rubric(self) -> Any:
        """The environment's rubric; one assigned after ``__init__`` learns the environment's era too."""
        return self._rubric

    @rubric.setter
    def rubric(self, rubric: Any) -> None:
        self._rubric = rubric
        if "conventions" in vars(self):  # not yet while Environment.__init__ assigns the first rubric
            self._teach_era()

    def _teach_era(self) -> None:
        """Tell parsers and rubrics the era (a parser or rubric shared with an environment of the other era
        follows the one that set it last)."""
        self.conventions.teach(_parsers(self), _rubrics(self.rubric))

    # -- hooks ------------------------------------------------------------------------------

    @abc.abstractmethod
    async def env_response(self, messages: Any, state: State, **kwargs: Any) -> Any:
        """The environment's reply to the model's last turn (messages; tuple era: ``(messages, state)``)."""

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        """Prepare per-rollout state before the first model turn."""
        return state

    async def is_completed(self, *args: Any, **kwargs: Any) -> bool:
        """Whether the rollout is over: the first ``@vf.stop`` condition that fires ends it.

        Accepts ``(state)`` and the tuple era's ``(messages, state)``.
        """
        state = kwargs["state"] if "state" in kwargs else args[-1]
        for condition in self._stop_conditions:
            if await maybe_await(condition, state):
                state["stop_condition"] = condition.__name__
                return True
        return False

    async def get_prompt_messages(self, state: State) -> Any:
        """What the model sees next: the last turn's prompt and completion plus ``env_response``.

        Override to show the model a non-linear history (a window, a summary, a rewritten
        system prompt); the rollout's completion is then rendered from the trajectory.
        """
        if not state["trajectory"]:
            return state["prompt"]
        last = state["trajectory"][-1]
        messages = _concat(last["prompt"], last["completion"])
        reply = await maybe_await(self.env_response, messages, state)
        return _concat(messages, self._normalize(reply))

    async def add_model_response(self, state: State, prompt_messages: Any, response: Any) -> None:
        """Record one model response as a trajectory step (through ``add_trajectory_step``)."""
        await self.add_trajectory_step(state, self._record_response(state, prompt_messages, response))

    async def add_trajectory_step(self, state: State, trajectory_step: TrajectoryStep) -> None:
        """Append one step; override to attach per-step rewards or extras."""
        state["trajectory"].append(trajectory_step)

    async def render_completion(self, state: State) -> None:
        """``state["completion"]``: the last step's conversation (and final env response) past the prompt."""
        if not state["trajectory"]:
            state["completion"] = "" if self.message_type == "completion" else []
            return
        last = state["trajectory"][-1]
        full = _concat(last["prompt"], last["completion"])
        if state.get("final_env_response") is not None:
            full = _concat(full, self._normalize(state["final_env_response"]))
        state["completion"] = full[len(state["prompt"]):]

    # -- built-in stop conditions -----------------------------------------------------------

    @stop(priority=100)
    async def has_error(self, state: State) -> bool:
        return state.get("error") is not None

    @stop(priority=90)
    async def prompt_too_long(self, state: State) -> bool:
        return bool(state.get("prompt_too_long"))

    @stop(priority=80)
    async def has_final_env_response(self, state: State) -> bool:
        return state.get("final_env_response") is not None

    @stop
    async def max_turns_reached(self, state: State) -> bool:
        return 0 < self.max_turns <= self.conventions.turns_taken(state)

    @stop
    async def max_total_completion_tokens_reached(self, state: State) -> bool:
        limit = self.max_total_completion_tokens
        return limit > 0 and state.get("total_completion_tokens", 0) >= limit

    def monitor_metrics(self, state: State) -> dict[str, float]:
        return {"num_turns": float(len(state.get("trajectory") or []))}

    # -- the loop ---------------------------------------------------------------------------

    async def init_state(self, input: dict[str, Any], client: Any, model: str,
                         sampling_args: dict[str, Any] | None = None) -> State:
        """A fresh state for one rollout of ``input`` (a dataset row)."""
        args = copy.deepcopy(self.sampling_args)
        args.update(sampling_args or {})
        info = dict(input.get("info") or {})
        oai_tools = [to_oai_tool(t) for t in self._row_tools(info)]
        prompt = input["prompt"]
        prompt = to_messages(_drop_none(m) for m in prompt) if isinstance(prompt, list) else prompt
        state = State.new(
            prompt=prompt, answer=input.get("answer", ""), task=input.get("task", "default"), info=info,
            example_id=input.get("example_id", input.get("id", 0)), model=model, client=client,
            sampling_args=args, oai_tools=oai_tools, tool_defs=[to_tool_def(t) for t in oai_tools], input=dict(input),
        )
        remember_tools(state)  # so that setup_state replacing either tool list is noticed
        return state

    def _row_tools(self, info: dict[str, Any]) -> list[Any]:
        """The tools one dataset row is offered: its ``info["tool_defs"]`` (0.3.0) or ``info["oai_tools"]``
        (0.1.x), else the env's. A list, even empty, chooses (``[]``: no tools); None counts as absent,
        since a datasets column holds None in every row that lacked the key."""
        for key in ("tool_defs", "oai_tools"):
            tools = info.get(key)
            if tools is None:
                continue
            if isinstance(tools, (str, bytes, dict)) or not hasattr(tools, "__iter__"):
                raise TypeError(f"info[{key!r}] must be a list of tool definitions, got {type(tools).__name__}")
            return list(tools)
        return list(self.oai_tools or [])

    async def rollout(self, *args: Any, **kwargs: Any) -> Any:
        """Run one rollout.

        State era: ``rollout(input, client, model, sampling_args=None) -> State``.
        Tuple era: ``rollout(client, model, prompt, answer="", task="default", info=None,
        sampling_args=None) -> (completion, state)``.
        """
        if is_tuple_rollout_call(args, kwargs):
            return await tuple_rollout(self._state_rollout, *args, **kwargs)
        return await self._state_rollout(*args, **kwargs)

    async def _state_rollout(self, input: dict[str, Any], client: Any, model: str,
                             sampling_args: dict[str, Any] | None = None, **_: Any) -> State:
        state = await self.init_state(input, client, model, sampling_args)
        return await self.run_loop(state)

    @final
    async def run_loop(self, state: State) -> State:
        """Drive one initialised state to completion; errors of the SDK's tree are recorded, not raised."""
        started = time.perf_counter()
        try:
            state = await maybe_await(self.setup_state, state) or state
            if self.timeout_seconds:
                await asyncio.wait_for(self._turns(state), timeout=self.timeout_seconds)
            else:
                await self._turns(state)
        except OverlongPromptError:
            state["prompt_too_long"] = True
            state["is_truncated"] = True
            state["stop_condition"] = "prompt_too_long"
        except Error as error:
            _record_error(state, error)
        except asyncio.TimeoutError:
            _record_error(state, TimeoutError(f"rollout exceeded timeout_seconds={self.timeout_seconds}"))
        finally:
            if self._hooked:
                await self.render_completion(state)
            await self._run_cleanup(state)
            elapsed_ms = (time.perf_counter() - started) * 1000
            state["timing"]["generation_ms"] = elapsed_ms
            state["timing"]["total_ms"] = elapsed_ms + state["timing"].get("scoring_ms", 0.0)
            state["is_completed"] = True
        return state

    @final
    async def _turns(self, state: State) -> None:
        if self._hooked:
            return await self._hooked_turns(state)
        messages = copy.copy(state["prompt"])
        if await self._should_stop(messages, state):
            return
        messages = await self._model_turn(messages, state)
        while not await self._should_stop(messages, state):
            messages = await self._env_turn(messages, state)
            if state.get("final_env_response") is not None:
                state["stop_condition"] = "has_final_env_response"
                return
            if await self.conventions.stops_after_env_turn(functools.partial(self._should_stop, messages, state)):
                return
            messages = await self._model_turn(messages, state)

    async def _hooked_turns(self, state: State) -> None:
        while not await self._should_stop(None, state):
            prompt = self._normalize(await self.get_prompt_messages(state))
            if state.get("final_env_response") is not None:
                continue  # the next stop check ends the rollout
            response = await self.get_model_response(state, prompt)
            await self.add_model_response(state, prompt, response)

    async def _should_stop(self, messages: Any, state: State) -> bool:
        if state.get("error") is not None or state.get("prompt_too_long"):
            state["stop_condition"] = state.get("stop_condition") or (
                "has_error" if state.get("error") is not None else "prompt_too_long")
            return True
        done = await self.conventions.is_completed(self.is_completed, messages, state)
        if done and not state.get("stop_condition"):
            state["stop_condition"] = "is_completed"
        return bool(done)

    async def _model_turn(self, messages: Any, state: State) -> Any:
        response = await self.get_model_response(state, messages)
        step = self._record_response(state, messages, response)
        if self.message_type == "completion":
            state.setdefault("responses_start_idx", []).append(len(state["completion"]))
        state["completion"] += step["completion"]
        state["trajectory"].append(step)
        return _concat(messages, step["completion"])

    def _record_response(self, state: State, prompt: Any, response: Any) -> TrajectoryStep:
        """The step for one response; the turn, token and truncation counters move on."""
        parsed = parse_response(response, self.message_type)
        completion = parsed.message if self.message_type == "completion" else [parsed.message]
        state["responses"].append(response)
        state["turn"] += 1
        state["total_completion_tokens"] = state.get("total_completion_tokens", 0) + parsed.completion_tokens
        state["is_truncated"] = state["is_truncated"] or parsed.is_truncated
        return TrajectoryStep(
            prompt=copy.copy(prompt), completion=completion, response=response, tokens=parsed.tokens,
            reward=None, advantage=None, is_truncated=parsed.is_truncated,
            trajectory_id=state["trajectory_id"], extras={},
        )

    def _normalize(self, messages: Any) -> Any:
        if self.message_type == "completion":
            return messages or ""
        return [to_message(m) for m in (messages or [])]

    async def _env_turn(self, messages: Any, state: State) -> Any:
        result = await maybe_await(self.env_response, messages, state)
        reply = self._normalize(reply_messages(result, state))
        state["completion"] += reply
        return _concat(messages, reply)

    async def _run_cleanup(self, state: State) -> None:
        for handler in self._cleanup_handlers:
            try:
                await maybe_await(handler, state)
            except Error as error:
                logger.warning("cleanup handler %s failed: %r", handler.__name__, error)
                state.setdefault("cleanup_errors", []).append(f"{handler.__name__}: {error!r}")


def _concat(first: Any, second: Any) -> Any:
    """Messages joined: text in completion mode, lists of messages in chat mode."""
    return first + second if isinstance(first, str) else [*first, *second]


def _drop_none(message: Any) -> Any:
    """Datasets fill absent struct fields with None; the API must not see them."""
    if isinstance(message, dict):
        return {k: v for k, v in message.items() if v is not None}
    return message


def _record_error(state: State, error: BaseException) -> None:
    # The exception itself, as in the State era (envs may test its type); outputs stringify it.
    state["error"] = error
    state["stop_condition"] = "has_error"
    logger.debug("rollout recorded error %r", error)


def _rubrics(rubric: Any) -> list[Any]:
    """A rubric and, for a group, every member rubric, at any depth."""
    return [rubric, *(r for member in getattr(rubric, "rubrics", []) for r in _rubrics(member))]


def _parsers(env: Any) -> list[Parser]:
    """The environment's parser and those of its rubrics."""
    found = [env.parser, *(getattr(r, "parser", None) for r in _rubrics(env.rubric))]
    return list({id(p): p for p in found if isinstance(p, Parser)}.values())


__all__ = ["MultiTurnEnv"]
