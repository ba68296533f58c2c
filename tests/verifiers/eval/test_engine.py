"""The engine: concurrency caps, group scoring, streaming groups out as they finish."""

from __future__ import annotations

import asyncio
from typing import Any

from datasets import Dataset

import verifiers as vf
import verifiers.testing as vf_testing
from verifiers.eval.engine import expand_rollouts, generate


def _env(rubric: vf.Rubric | None = None, n: int = 4) -> vf.SingleTurnEnv:
    ds = Dataset.from_list([{"question": f"q{i}", "answer": f"q{i}"} for i in range(n)])
    return vf.SingleTurnEnv(dataset=ds, rubric=rubric or vf.Rubric(funcs=[lambda: 1.0]))


class Peak:
    """Counts how many calls are inside a section at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def hold(self, seconds: float) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(seconds)
        self.now -= 1


async def test_generation_cap_is_respected(serve, client_for) -> None:
    peak = Peak()

    class Counting(vf.SingleTurnEnv):
        async def setup_state(self, state, **kwargs):
            await peak.hold(0.05)
            return state

    env = Counting(dataset=Dataset.from_list([{"question": str(i), "answer": ""} for i in range(12)]))
    await generate(env, expand_rollouts(env.get_dataset(), 1), client_for(serve("echo")), "m",
                   max_concurrent_generation=3)
    assert peak.peak == 3


async def test_scoring_cap_and_groups(serve, client_for) -> None:
    peak = Peak()
    seen_groups: list[list[int]] = []

    async def group_reward(completions, answers, states) -> list[float]:
        await peak.hold(0.05)
        seen_groups.append([s["example_id"] for s in states])
        return [float(c[-1]["content"] == a) for c, a in zip(completions, answers)]

    env = _env(vf.Rubric(funcs=[group_reward]), n=4)
    streamed: list[list[dict]] = []
    results = await generate(env, expand_rollouts(env.get_dataset(), 3), client_for(serve("echo")), "m",
                             max_concurrent_scoring=1, on_group=lambda outputs, states: streamed.append(outputs))
    assert peak.peak == 1
    assert sorted(seen_groups) == [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
    assert len(streamed) == 4 and all(len(g) == 3 for g in streamed)
    assert results.reward == [1.0] * 12
    assert all(o["advantage"] == 0.0 for o in results["outputs"])


async def test_independent_scoring_makes_singleton_groups(serve, client_for) -> None:
    sizes: list[int] = []

    def sized(states) -> list[float]:
        sizes.append(len(states))
        return [1.0] * len(states)

    env = _env(vf.Rubric(funcs=[sized]), n=2)
    await generate(env, expand_rollouts(env.get_dataset(), 2), client_for(serve("echo")), "m", independent_scoring=True)
    assert sizes == [1, 1, 1, 1]


async def test_an_env_built_with_score_rollouts_false_is_not_scored(serve, client_for) -> None:
    ds = Dataset.from_list([{"question": "q", "answer": "q"}])
    env = vf.SingleTurnEnv(dataset=ds, rubric=vf.Rubric(funcs=[lambda: 1.0]), score_rollouts=False)
    result = await env.evaluate(client_for(serve("echo")), "m", num_examples=1)
    assert [(o["reward"], o["metrics"]) for o in result["outputs"]] == [(0.0, {})]


async def test_errored_rollouts_are_not_scored_and_do_not_shift_their_groups_advantages(serve, client_for) -> None:
    seen: list[list[Any]] = []

    def group_reward(completions, states) -> list[float]:
        seen.append(completions)  # before reading them: an errored rollout's empty completion would raise below
        return [float(len(c[-1]["content"])) for c in completions]

    def bad_body_for_q1(request) -> vf_testing.Reply:
        if request.last_user_text == "q1":
            return vf_testing.Reply(raw_body=b"<html>proxy error</html>")
        return vf_testing.Reply(request.last_user_text)

    env = _env(vf.Rubric(funcs=[group_reward]), n=2)
    rows = [{**row, "rollout_index": 0} for row in env.get_dataset()]
    results = await generate(env, rows + [{**rows[0], "rollout_index": 1}], client_for(serve(bad_body_for_q1)), "m")
    by_example = {o["example_id"]: o for o in results["outputs"] if o["rollout_index"] == 0}
    errored = by_example[1]
    assert errored["error"].startswith("MalformedModelResponseError: the model API's reply is not valid JSON")
    assert (errored["reward"], errored["metrics"], errored["scoring_errors"]) == (0.0, {}, {})
    assert errored["advantage"] is None
    assert [[c[-1]["content"] for c in group] for group in seen] == [["q0", "q0"]]  # never saw the errored one
    assert by_example[0]["reward"] == 2.0 and by_example[0]["advantage"] == 0.0


def test_expand_rollouts_rejects_bad_counts() -> None:
    import pytest

    with pytest.raises(ValueError):
        expand_rollouts([{"prompt": []}], 0)


async def test_other_keyword_arguments_are_run_past_and_logged_once(serve, client_for, caplog, monkeypatch) -> None:
    import logging

    from verifiers.eval import engine

    monkeypatch.setattr(engine, "_warned", set())
    env = _env(n=2)
    rows = expand_rollouts(env.get_dataset(), 1)
    with caplog.at_level(logging.WARNING, logger="verifiers.eval"):
        # the original's defaults say nothing; a typo and a setting that does nothing here are named, once each
        await generate(env, rows, client_for(serve("echo")), "m", interleave_scoring=True, results_path=None)
        assert caplog.text == ""
        for _ in range(2):
            results = await generate(env, rows, client_for(serve("echo")), "m", max_concurent=2, save_results=True)
    assert [o["reward"] for o in results["outputs"]] == [1.0, 1.0]  # the run itself is unaffected
    assert caplog.text.count("unknown keyword argument 'max_concurent'") == 1
    assert caplog.text.count("generate(save_results=True): accepted for compatibility") == 1
