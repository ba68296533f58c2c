"""The generation engine: many rollouts at once, scored per example group, saved as they finish.

Rollouts of one example form a group: they run concurrently and are scored
together (group reward functions and advantages need the whole group). Two
separate caps bound the work: ``max_concurrent_generation`` rollouts talk to
the model at once, ``max_concurrent_scoring`` groups are scored at once (so a
slow judge never starves generation). Each scored group is handed to
``on_group`` at once — ``vf-eval`` appends it to ``results.jsonl`` there, which
is what makes a killed run resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

from verifiers.compat.calls import overrides_tuple_rollout, run_tuple_rollout
from verifiers.envs.dataset import rows_from_inputs
from verifiers.eval.outputs import state_to_output
from verifiers.state import State
from verifiers.types import GenerateOutputs

logger = logging.getLogger("verifiers.eval")

T = TypeVar("T")
# Arguments the original's generate/evaluate take (0.1.x and 0.3.0) that this engine does differently: saving and
# pushing are vf-eval's, retries the client's, progress bars the caller's. Accepted (name: the original's default),
# with a warning when set to anything else.
ORIGINAL_ONLY_ARGUMENTS: dict[str, Any] = {
    "interleave_scoring": True, "use_tqdm": True, "results_path": None, "save_results": False, "save_every": -1,
    "push_to_hf_hub": False, "hf_hub_dataset_name": None, "max_retries": 0, "shuffle": False, "shuffle_seed": None,
    "on_start": None, "on_log": None,
}
_warned: set[str] = set()
GroupCallback = Callable[[list[dict[str, Any]], list[State]], Awaitable[None] | None]


def expand_rollouts(dataset: Iterable[dict[str, Any]], rollouts_per_example: int,
                    block_major: bool = False) -> list[dict[str, Any]]:
    """Each row repeated ``rollouts_per_example`` times, tagged with ``rollout_index``.

    Example-major (e0 e0 e1 e1) by default; ``block_major`` gives the tuple era's order (e0 e1 e0 e1).
    Grouping for scoring is by example either way.
    """
    if rollouts_per_example < 1:
        raise ValueError(f"rollouts_per_example must be >= 1, got {rollouts_per_example}")
    rows = rows_from_inputs(dataset)
    if block_major:
        return [{**row, "rollout_index": r} for r in range(rollouts_per_example) for row in rows]
    return [{**row, "rollout_index": r} for row in rows for r in range(rollouts_per_example)]


def _warn_ignored(arguments: dict[str, Any]) -> None:
    for name, value in arguments.items():
        known = name in ORIGINAL_ONLY_ARGUMENTS
        if name in _warned or (known and value == ORIGINAL_ONLY_ARGUMENTS[name]):
            continue
        _warned.add(name)
        if known:
            logger.warning("generate(%s=%r): accepted for compatibility with the original and ignored here", name,
                           value)
        else:
            logger.warning("generate() got an unknown keyword argument %r; ignored (a misspelt option?)", name)


def _semaphore(limit: int | None) -> asyncio.Semaphore | contextlib.nullcontext:
    return asyncio.Semaphore(limit) if limit and limit > 0 else contextlib.nullcontext()


def _as_async_client(client: Any) -> Any:
    """The original accepted a sync ``OpenAI`` client; rollouts need the async one."""
    from openai import AsyncOpenAI, OpenAI

    from verifiers.clients import OpenAIChatCompletionsClient

    if isinstance(client, OpenAIChatCompletionsClient):  # a 0.3.0-style adapter wraps the real client
        client = client.client
    if isinstance(client, OpenAI):
        return AsyncOpenAI(api_key=client.api_key, base_url=client.base_url, max_retries=client.max_retries,
                           timeout=client.timeout, default_headers=dict(client._custom_headers))
    return client


async def run_rollout(env: Any, row: dict[str, Any], client: Any, model: str,
                      sampling_args: dict[str, Any] | None) -> State:
    """One rollout of ``row`` through the environment's own ``rollout``, whichever era it overrides."""
    if overrides_tuple_rollout(type(env)):
        return await run_tuple_rollout(env, row, client, model, sampling_args)
    return await env.rollout(row, client, model, sampling_args)


async def generate(
    env: Any,
    inputs: Any,
    client: Any,
    model: str,
    sampling_args: dict[str, Any] | None = None,
    *,
    max_concurrent: int = -1,
    max_concurrent_generation: int | None = None,
    max_concurrent_scoring: int | None = None,
    score_rollouts: bool = True,
    independent_scoring: bool = False,
    state_columns: list[str] | None = None,
    on_group: GroupCallback | None = None,
    on_progress: Callable[[int], None] | None = None,
    **ignored: Any,
) -> GenerateOutputs:
    """Run one rollout per input row, score each example's group, return results in input order.

    Rows sharing an ``example_id`` form a group (``independent_scoring`` makes
    every rollout its own group). ``on_group(outputs, states)`` is called as
    soon as a group is scored; ``on_progress(n)`` after every finished rollout. Rollouts that
    recorded an error are left out of their group's scoring (reward 0, no metrics). ``state_columns``
    are State keys copied into each output. Other keyword arguments do nothing; each is logged once per process
    (one the original takes, set to something other than its default, or a name no version takes: a typo).
    """
    _warn_ignored(ignored)
    client = _as_async_client(client)
    rows = rows_from_inputs(inputs)
    generation = _semaphore(max_concurrent_generation if max_concurrent_generation is not None else max_concurrent)
    scoring = _semaphore(max_concurrent_scoring if max_concurrent_scoring is not None else max_concurrent)
    groups = _group_rows(rows, independent_scoring)
    states: list[State | None] = [None] * len(rows)
    outputs: list[dict[str, Any] | None] = [None] * len(rows)

    async def one(index: int) -> State:
        async with generation:
            state = await run_rollout(env, rows[index], client, model, sampling_args)
        if on_progress is not None:
            on_progress(1)
        return state

    async def group(indices: list[int]) -> None:
        group_states = list(await asyncio.gather(*(one(i) for i in indices)))
        # A rollout that recorded an error is not scored: its reward functions would only fail or score
        # what the model never said, and count the one error again as theirs. Reward 0, no metrics.
        # Environment(score_rollouts=False) (0.3.0) turns scoring off as the argument does: reward 0, no metrics.
        scoring_on = score_rollouts and getattr(env, "score_rollouts", True) is not False
        scored: list[State] = []
        for state in group_states:
            if scoring_on and state.get("error") is None:
                scored.append(state)
            else:
                state["reward"], state["metrics"] = 0.0, {}
        if scored:
            async with scoring:
                await env.score_group(scored)
        group_outputs = [
            state_to_output(s, rows[i].get("rollout_index", 0), state_columns) for i, s in zip(indices, group_states)
        ]
        for i, state, output in zip(indices, group_states, group_outputs):
            states[i], outputs[i] = state, output
        if on_group is not None:
            result = on_group(group_outputs, group_states)
            if asyncio.iscoroutine(result):
                await result

    await asyncio.gather(*(group(indices) for indices in groups))
    return GenerateOutputs(outputs=[o for o in outputs if o is not None], metadata={},
                           states=[s for s in states if s is not None])


def _group_rows(rows: list[dict[str, Any]], independent: bool) -> list[list[int]]:
    if independent:
        return [[i] for i in range(len(rows))]
    groups: dict[Any, list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row.get("task", "default"), row.get("example_id")), []).append(index)
    return list(groups.values())


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even when called inside a running event loop.

    Inside a loop (a notebook, an async test) the coroutine runs on a fresh
    loop in a helper thread, instead of patching the running loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as error:  # re-raised in the caller's thread below
            box["error"] = error

    thread = threading.Thread(target=target, name="verifiers-run-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


__all__ = ["expand_rollouts", "generate", "run_rollout", "run_sync"]
