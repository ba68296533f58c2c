"""Time the sandbox work of swe rollouts without a model: ``python measure_setup.py [--rollouts N]``.

Each rollout is the environment's own path with no model turn: ``setup_state`` asks for the sandbox,
``repository_ready`` waits until the buggy repository is in place (set-up: the sandbox's start plus putting
the repository there), ``post_rollout`` grades the untouched repository (every FAIL_TO_PASS test must fail
and every PASS_TO_PASS test pass), then the sandbox is deleted. Each of N instances gets two rollouts, one
after the other: its first in this process (which may build per-instance caches) and a repeat, as a group's
other rollouts and later steps are. Rollouts run one at a time, so the figures are per rollout, not
contended. A warm-up rollout of another instance (per-process caches, the backend's start) comes first and
is not counted. Prints the median and range in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from swe import load_environment


async def _one(env, row) -> tuple[float, float, float]:  # noqa: ANN001 (SweEnv, a dataset row)
    """(sandbox start, set-up in all, grading) seconds for one rollout of ``row``."""
    state = await env.init_state(row, client=None, model="none")
    started = time.perf_counter()
    state = await env.setup_state(state)
    try:
        await env.repository_ready(state["sandbox_id"])
        ready = time.perf_counter()
        await env.post_rollout(state)
        graded = time.perf_counter()
    finally:
        await env.sandbox_client.delete(state["sandbox_id"])
    result = state.get("swe") or {}
    if state.get("error") is not None or any(result.get("fail_to_pass", [True])) or not all(result["pass_to_pass"]):
        raise SystemExit(f"rollout of {row['info']['instance_id']} went wrong: {state.get('error') or result}")
    return state["sandbox_state"]["ready_wait_time"], ready - started, graded - ready


async def measure(rollouts: int) -> None:
    env = load_environment(num_eval_examples=rollouts + 1)
    rows = list(env.get_eval_dataset())
    await _one(env, rows[0])  # the warm-up
    first, repeat = [], []
    for row in rows[1:]:
        first.append(await _one(env, row))
        repeat.append(await _one(env, row))
    for label, times in (("first rollout of an instance", first), ("repeat rollout", repeat)):
        print(f"{label} ({len(times)}):")
        for name, values in zip(("sandbox start", "set-up (start + repository)", "grading"), zip(*times)):
            print(f"  {name:28s} median {statistics.median(values):.3f}s  "
                  f"range {min(values):.3f}-{max(values):.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=9, help="rollouts timed after the warm-up (default 9)")
    args = parser.parse_args()
    if not 1 <= args.rollouts <= 31:
        parser.error("--rollouts must be 1-31 (the eval split has 32 instances)")
    asyncio.run(measure(args.rollouts))


if __name__ == "__main__":
    main()
