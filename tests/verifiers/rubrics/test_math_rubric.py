"""MathRubric with the real math-verify, run in the real worker pool."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import pytest

from verifiers.errors import UsageError
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.rubrics.math_rubric import MathRubric

PROMPT = [{"role": "user", "content": "What is 1/2 as a decimal?"}]


def reply(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize("text, answer, expected", [
    ("<think>divide</think> The answer is \\boxed{0.5}.", "\\frac{1}{2}", 1.0),
    ("So \\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("\\boxed{0.6}", "\\frac{1}{2}", 0.0),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", 1.0),
])
async def test_correct_and_incorrect_answers(text, answer, expected):
    rubric = MathRubric()
    score = await rubric.score_rollout(PROMPT, reply(text), answer, {})
    assert score.metrics == {"correct_answer_reward_func": expected}
    assert score.reward == expected
    assert rubric.failure_counts == {}


async def test_defaults_and_empty_response():
    rubric = MathRubric(funcs=[lambda completion: 1.0], weights=[0.5])
    assert isinstance(rubric.parser, MaybeThinkParser)
    assert rubric.get_reward_func_names() == ["<lambda>", "correct_answer_reward_func"]
    assert rubric.get_reward_weights() == [0.5, 1.0]
    score = await rubric.score_rollout(PROMPT, reply(""), "0.5", {})
    assert score.metrics["correct_answer_reward_func"] == 0.0
    assert rubric.failure_counts == {}


def test_missing_math_verify_is_a_usage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "math_verify", None)
    with pytest.raises(UsageError, match="pip install math-verify"):
        MathRubric()


def test_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout_seconds must be positive"):
        MathRubric(timeout_seconds=0)


def test_scoring_from_a_non_main_thread():
    # math-verify's own signal-based timeouts fail outside the main thread; the pool makes this work.
    rubric = MathRubric()
    result: dict = {}

    def run() -> None:
        result["score"] = asyncio.run(rubric.score_rollout(PROMPT, reply("\\boxed{0.5}"), "\\frac{1}{2}", {}))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert result["score"].reward == 1.0
    assert rubric.failure_counts == {}


@pytest.mark.slow  # ~5 s: a 2 s timeout, then a fresh pool starts
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a second worker is needed to check beside a stuck one")
async def test_a_stuck_check_neither_hangs_nor_holds_up_other_checks():
    rubric = MathRubric(timeout_seconds=2.0)
    await rubric.score_rollout(PROMPT, reply("\\boxed{1}"), "1", {})  # workers start up untimed
    finished = []

    async def score(text: str, answer: str, state: dict) -> float:
        result = await rubric.score_rollout(PROMPT, reply(text), answer, state)
        finished.append(text)
        return result.reward

    stuck_state: dict = {}
    start = time.perf_counter()
    stuck = asyncio.create_task(score("\\boxed{9^{9^{9^{9}}}}", "1", stuck_state))  # never finishes by itself
    await asyncio.sleep(0.1)
    assert await score("\\boxed{0.5}", "\\frac{1}{2}", {}) == 1.0
    assert await stuck == 0.0
    assert time.perf_counter() - start < 6.0
    assert finished == ["\\boxed{0.5}", "\\boxed{9^{9^{9^{9}}}}"]  # checked beside the stuck one, not after it
    assert rubric.failure_counts == {"correct_answer_reward_func": 1}
    assert "did not finish within 2 s" in stuck_state["scoring_errors"]["correct_answer_reward_func"]
    after = await rubric.score_rollout(PROMPT, reply("\\boxed{0.5}"), "\\frac{1}{2}", {})
    assert after.reward == 1.0  # a fresh pool replaced the stuck one


async def test_many_concurrent_scorings_do_not_block_the_event_loop():
    rubric = MathRubric()
    # Warm every pool worker first: starting one is a one-time cost, not the steady state measured here.
    await asyncio.gather(*(rubric.score_rollout(PROMPT, reply("\\boxed{1}"), "1", {}) for _ in range(8)))
    gaps = []

    async def ticker(stop: asyncio.Event) -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(stop))
    cases = [(f"\\frac{{{k}}}{{4}}", str(k / 4)) for k in range(1, 25)]
    scores = await asyncio.gather(*(rubric.score_rollout(PROMPT, reply(f"\\boxed{{{r}}}"), a, {}) for a, r in cases))
    stop.set()
    await ticking
    assert [s.reward for s in scores] == [1.0] * len(cases)
    assert len(gaps) > 3 and max(gaps) < 0.25
