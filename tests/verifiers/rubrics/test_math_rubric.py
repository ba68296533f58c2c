"""MathRubric with the real math-verify, run in the real worker pool."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import pytest

from verifiers.data import extract_boxed_answer
from verifiers.errors import UsageError
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.rubrics.math_rubric import MathAnswerParser, MathRubric
from verifiers.state import State

PROMPT = [{"role": "user", "content": "What is 1/2 as a decimal?"}]


def reply(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def thought(text: str) -> list[dict]:
    """A reply with a think block: both eras read the boxed answer after it."""
    return reply(f"<think>divide</think> {text}")


async def score_state_era(rubric: MathRubric, completion: list[dict], answer: str) -> State:
    state = State.new(prompt=PROMPT, answer=answer)
    state["completion"] = completion
    await rubric.score_rollout(state)
    return state


@pytest.mark.parametrize("text, answer, expected", [
    ("The answer is \\boxed{0.5}.", "\\frac{1}{2}", 1.0),
    ("So \\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("\\boxed{0.6}", "\\frac{1}{2}", 0.0),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", 1.0),
])
async def test_correct_and_incorrect_answers_in_both_eras(text, answer, expected):
    rubric = MathRubric()
    state = await score_state_era(rubric, thought(text), answer)
    assert state["metrics"] == {"correct_answer": expected}
    assert state["reward"] == expected
    rubric.use_era("tuple")
    score = await rubric.score_rollout(PROMPT, thought(text), answer, {})
    assert score.metrics == {"correct_answer_reward_func": expected}
    assert score.reward == expected
    assert rubric.failure_counts == {}


# How each classic release reads a reply with its default parser: 0.3.0 (State era) takes the
# whole reply without </think> but only a boxed answer; 0.1.5 (tuple era) needs </think> but
# takes unboxed text after it.
ERA_CASES = [
    # reply, State-era score, tuple-era score
    ("42", 0.0, 0.0),
    ("\\boxed{42}", 1.0, 0.0),
    ("<think>six sevens</think>\\boxed{42}", 1.0, 1.0),
    ("<think>six sevens</think> 42", 0.0, 1.0),
    ("<think>six sevens</think>\\boxed{41}", 0.0, 0.0),
    ("\\boxed{42", 0.0, 0.0),
]


@pytest.mark.parametrize("text, state_era, tuple_era", ERA_CASES)
async def test_default_parser_reads_the_reply_as_each_era_did(text, state_era, tuple_era):
    rubric = MathRubric()
    state = await score_state_era(rubric, reply(text), "42")
    assert state["metrics"] == {"correct_answer": state_era}
    rubric.use_era("tuple")
    score = await rubric.score_rollout(PROMPT, reply(text), "42", {})
    assert score.metrics == {"correct_answer_reward_func": tuple_era}


async def test_the_call_form_never_switches_the_era():
    # A shared rubric scored both ways at once must score each the same: the era is the environment's.
    rubric = MathRubric()
    state = State.new(prompt=PROMPT, answer="42")
    state["completion"] = reply("\\boxed{42}")
    tuple_form, _ = await asyncio.gather(rubric.score_rollout(PROMPT, reply("\\boxed{42}"), "42", {}),
                                         rubric.score_group([state]))
    assert tuple_form.metrics == {"correct_answer": 1.0} and state["metrics"] == {"correct_answer": 1.0}
    assert rubric.era == "state"


async def test_use_era_sets_the_metric_name_and_keeps_its_place_and_weight():
    rubric = MathRubric(funcs=[lambda completion: 1.0], weights=[0.5])
    assert rubric.era == "state" and rubric.parser.era == "state"
    assert rubric.get_reward_func_names() == ["<lambda>", "correct_answer"]
    rubric.use_era("tuple")
    assert rubric.get_reward_func_names() == ["<lambda>", "correct_answer_reward_func"]
    assert rubric.get_reward_weights() == [0.5, 1.0]
    assert rubric.parser.era == "tuple"
    rubric.add_reward_func(lambda answer: 0.0, weight=2.0)
    rubric.use_era("state")
    assert rubric.get_reward_func_names() == ["<lambda>", "correct_answer", "<lambda>"]
    assert rubric.get_reward_weights() == [0.5, 1.0, 2.0]


def test_use_era_rejects_an_unknown_era():
    with pytest.raises(ValueError, match="era must be one of"):
        MathRubric().use_era("0.2")
    with pytest.raises(ValueError, match="era must be one of"):
        MathAnswerParser(era="new")


async def test_a_parser_you_pass_is_used_as_given_in_both_eras():
    parser = MaybeThinkParser(extract_fn=extract_boxed_answer)  # non-strict: a bare "42" is an answer
    rubric = MathRubric(parser=parser)
    assert rubric.parser is parser
    state = await score_state_era(rubric, reply("42"), "42")
    assert state["metrics"] == {"correct_answer": 1.0}
    rubric.use_era("tuple")
    score = await rubric.score_rollout(PROMPT, reply("42"), "42", {})
    assert score.metrics == {"correct_answer_reward_func": 1.0}


async def test_state_era_group_scoring_and_the_tuple_eras_parallel_lists():
    rubric = MathRubric()
    states = [State.new(prompt=PROMPT, answer="42") for _ in range(2)]
    states[0]["completion"], states[1]["completion"] = reply("\\boxed{42}"), reply("42")
    await rubric.score_group(states)
    assert [s["metrics"] for s in states] == [{"correct_answer": 1.0}, {"correct_answer": 0.0}]
    rubric.use_era("tuple")
    scores = await rubric.score_rollouts([PROMPT] * 2, [reply("\\boxed{42}"), thought("42")], ["42"] * 2, [{}, {}])
    assert scores.metrics == {"correct_answer_reward_func": [0.0, 1.0]}


async def test_defaults_and_empty_response():
    rubric = MathRubric(funcs=[lambda completion: 1.0], weights=[0.5])
    assert isinstance(rubric.parser, MathAnswerParser) and isinstance(rubric.parser, MaybeThinkParser)
    assert rubric.get_reward_weights() == [0.5, 1.0]
    state = await score_state_era(rubric, reply(""), "0.5")
    assert state["metrics"]["correct_answer"] == 0.0
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
        result["score"] = asyncio.run(rubric.score_rollout(PROMPT, thought("\\boxed{0.5}"), "\\frac{1}{2}", {}))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert result["score"].reward == 1.0
    assert rubric.failure_counts == {}


@pytest.mark.slow  # ~5 s: a 2 s timeout, then a fresh pool starts
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="n/a on one core: needs a worker beside a stuck one")
async def test_a_stuck_check_neither_hangs_nor_holds_up_other_checks():
    rubric = MathRubric(timeout_seconds=2.0)
    rubric.use_era("tuple")
    await rubric.score_rollout(PROMPT, thought("\\boxed{1}"), "1", {})  # workers start up untimed
    finished = []

    async def score(text: str, answer: str, state: dict) -> float:
        result = await rubric.score_rollout(PROMPT, thought(text), answer, state)
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
    after = await rubric.score_rollout(PROMPT, thought("\\boxed{0.5}"), "\\frac{1}{2}", {})
    assert after.reward == 1.0  # a fresh pool replaced the stuck one


async def test_many_concurrent_scorings_do_not_block_the_event_loop():
    rubric = MathRubric()
    # Warm every pool worker first: starting one is a one-time cost, not the steady state measured here.
    await asyncio.gather(*(rubric.score_rollout(PROMPT, thought("\\boxed{1}"), "1", {}) for _ in range(8)))
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
    scores = await asyncio.gather(*(rubric.score_rollout(PROMPT, thought(f"\\boxed{{{r}}}"), a, {}) for a, r in cases))
    stop.set()
    await ticking
    assert [s.reward for s in scores] == [1.0] * len(cases)
    assert len(gaps) > 3 and max(gaps) < 0.25
