from __future__ import annotations

import asyncio
import logging

import pytest

from verifiers.decorators import cleanup, teardown
from verifiers.parsers.parser import Parser
from verifiers.rubrics.rubric import Rubric
from verifiers.state import State
from verifiers.types import RolloutScore

PROMPT = [{"role": "user", "content": "2+2?"}]
COMPLETION = [{"role": "assistant", "content": "4"}]


def exact(completion, answer) -> float:
    return float(completion[-1]["content"] == answer)


def quarter(**kwargs) -> float:
    return 0.25


def make_state(answer: str = "4", content: str = "4", example_id: int = 0, **row) -> State:
    state = State.new(prompt=PROMPT, answer=answer, example_id=example_id)
    state["input"].update(row)
    state["completion"] = [{"role": "assistant", "content": content}]
    return state


# --------------------------------------------------------------------- construction


def test_defaults_weights_and_parser():
    rubric = Rubric(funcs=[exact, quarter])
    assert rubric.get_reward_func_names() == ["exact", "quarter"]
    assert rubric.get_reward_funcs() == [exact, quarter]
    assert rubric.get_reward_weights() == [1.0, 1.0]
    assert isinstance(rubric.parser, Parser)
    assert rubric.class_objects == {"parser": rubric.parser}
    assert rubric.parallelize_scoring is None  # each era's own way


def test_add_reward_func_metric_and_class_object():
    rubric = Rubric()
    rubric.add_reward_func(exact, weight=0.5)
    rubric.add_metric(quarter)
    rubric.add_class_object("tokenizer", "tok")
    assert rubric.get_reward_weights() == [0.5, 0.0]
    assert rubric.class_objects["tokenizer"] == "tok"


def test_mismatched_weights_raise_value_error():
    with pytest.raises(ValueError, match="2 weights for 1 reward functions"):
        Rubric(funcs=[exact], weights=[1.0, 2.0])


def test_non_callable_func_and_bad_weight_raise_type_error():
    with pytest.raises(TypeError, match="must be callable, got str"):
        Rubric(funcs=["exact"])
    with pytest.raises(TypeError, match="must be callable"):
        Rubric().add_reward_func(None)
    with pytest.raises(TypeError, match="weight of 'exact' must be a number"):
        Rubric(funcs=[exact], weights=["high"])


def test_extra_kwargs_become_attributes(caplog):
    with caplog.at_level(logging.DEBUG, logger="verifiers.rubrics"):
        rubric = Rubric(funcs=[exact], max_length=10)
    assert rubric.max_length == 10
    assert "max_length" in caplog.text


def test_likely_typo_kwarg_warns_and_shadowing_kwarg_fails(caplog):
    with caplog.at_level(logging.WARNING, logger="verifiers.rubrics"):
        rubric = Rubric(reward_functions=[exact])
    assert rubric.get_reward_func_names() == []
    assert "did you mean funcs=" in caplog.text
    with pytest.raises(TypeError, match="shadow"):
        Rubric(score_rollout=None)


# ------------------------------------------------------- 0.1.x's reward_funcs / reward_weights


def test_the_classic_list_keywords_are_the_functions_and_weights(caplog):
    with caplog.at_level(logging.WARNING, logger="verifiers.rubrics"):
        rubric = Rubric(reward_funcs=[exact, quarter])
    assert rubric.get_reward_func_names() == ["exact", "quarter"] and rubric.get_reward_weights() == [1.0, 1.0]
    assert caplog.text == ""  # what 0.1.x scores with, not a typo
    weighted = Rubric(reward_funcs=[exact], reward_weights=[3.0])
    assert weighted.get_reward_weights() == [3.0]


async def test_lists_assigned_after_init_score_and_stay_live():
    class Lists(Rubric):
        def __init__(self):
            super().__init__()
            self.reward_funcs = [self.double]
            self.reward_weights = [0.5]

        def double(self, completion) -> float:
            return 2.0

    rubric = Lists()
    rubric.reward_funcs.append(quarter)  # the same list as funcs
    rubric.reward_weights.append(4.0)
    assert rubric.funcs == [rubric.double, quarter] and rubric.weights == [0.5, 4.0]
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.reward == pytest.approx(0.5 * 2.0 + 4.0 * 0.25)
    assert score.metrics == {"double": 2.0, "quarter": 0.25}


async def test_hand_assigned_lists_of_other_lengths_pair_up_as_zip_did():
    rubric = Rubric()
    rubric.reward_funcs = [exact, quarter]
    rubric.reward_weights = [2.0]  # the second function counts as a metric only
    assert rubric.get_reward_weights() == [2.0, 0.0]
    assert (await rubric.score_rollout(PROMPT, COMPLETION, "4", {})).reward == pytest.approx(2.0)
    rubric.reward_weights = [1.0, 1.0, 9.0]  # the extra weight has no function
    assert rubric.get_reward_weights() == [1.0, 1.0]


def test_bad_classic_lists_are_refused():
    rubric = Rubric()
    with pytest.raises(TypeError, match="must be numbers"):
        rubric.reward_weights = [1.0, "heavy"]
    with pytest.raises(TypeError):
        rubric.reward_funcs = [exact, "not a function"]


# ------------------------------------------------------------------- tuple era


async def test_score_rollout_weighted_sum_and_raw_metrics():
    rubric = Rubric(funcs=[exact, quarter], weights=[0.5, 2.0])
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {"timing": {"total_ms": 5.0}})
    assert isinstance(score, RolloutScore)
    assert score.reward == pytest.approx(0.5 * 1.0 + 2.0 * 0.25)
    assert score.metrics == {"exact": 1.0, "quarter": 0.25}


async def test_injection_by_name_with_and_without_kwargs():
    seen = {}

    def narrow(answer, task):
        seen["narrow"] = (answer, task)
        return 1.0

    async def wide(**kwargs):
        seen["wide"] = kwargs
        return 1.0

    rubric = Rubric(funcs=[narrow, wide])
    rubric.add_class_object("tokenizer", "tok")
    state = {}
    await rubric.score_rollout(PROMPT, COMPLETION, "4", state, task="math", info={"k": 1}, custom="x")
    assert seen["narrow"] == ("4", "math")
    offered = {"prompt", "completion", "answer", "state", "task", "info", "parser", "tokenizer", "custom"}
    assert set(seen["wide"]) == offered
    assert seen["wide"]["state"] is state and seen["wide"]["info"] == {"k": 1}


async def test_call_kwargs_override_class_objects():
    def uses_parser(parser):
        return parser

    rubric = Rubric(funcs=[uses_parser])
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {}, parser=0.75)
    assert score.reward == 0.75


async def test_timing_is_written_and_added_to_total():
    rubric = Rubric(funcs=[exact])
    state = {"timing": {"generation_ms": 3.0, "scoring_ms": 0.0, "total_ms": 3.0}}
    await rubric.score_rollout(PROMPT, COMPLETION, "4", state)
    assert state["timing"]["scoring_ms"] > 0.0
    assert state["timing"]["total_ms"] == pytest.approx(3.0 + state["timing"]["scoring_ms"])
    fresh = {}
    await rubric.score_rollout(PROMPT, COMPLETION, "4", fresh)
    assert fresh["timing"]["total_ms"] == fresh["timing"]["scoring_ms"] > 0.0


@pytest.mark.parametrize("parallel, expected", [
    (True, ["a-start", "b-start", "a-end", "b-end"]),
    (False, ["a-start", "a-end", "b-start", "b-end"]),
])
async def test_parallelize_scoring_runs_functions_concurrently_or_in_order(parallel, expected):
    events = []

    def tracer(label):
        async def func():
            events.append(f"{label}-start")
            await asyncio.sleep(0.01)
            events.append(f"{label}-end")
            return 1.0

        func.__name__ = label
        return func

    rubric = Rubric(funcs=[tracer("a"), tracer("b")], parallelize_scoring=parallel)
    await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert events == expected


async def test_state_era_runs_functions_in_order_by_default():
    # 0.3.0: a later function sees what an earlier (awaiting) one wrote to the state.
    async def first(state) -> float:
        await asyncio.sleep(0.01)
        state["tests_passed"] = 1.0
        return 1.0

    async def second(state) -> float:
        return state.get("tests_passed", 0.0)

    rubric = Rubric(funcs=[first, second])
    states = [make_state(), make_state()]
    await rubric.score_group(states)
    assert [s["reward"] for s in states] == [2.0, 2.0]
    single = make_state()
    await rubric.score_rollout(single)
    assert single["metrics"] == {"first": 1.0, "second": 1.0}
    # Asked for explicitly (SDK code; 0.3.0 had no such setting), the functions run at once.
    eager = make_state()
    await Rubric(funcs=[first, second], parallelize_scoring=True).score_rollout(eager)
    assert eager["metrics"] == {"first": 1.0, "second": 0.0}
    # The tuple era's call runs them at once by default, as 0.1.x did.
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.metrics == {"first": 1.0, "second": 0.0}


async def test_two_functions_with_one_name_both_count_but_the_later_is_the_metric():
    rubric = Rubric(funcs=[lambda: 1.0, lambda: 0.25])
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert (score.reward, score.metrics) == (1.25, {"<lambda>": 0.25})


async def test_score_rollouts_lists_limits_and_unweighted_mode():
    running = {"now": 0, "max": 0}

    async def slow(completion, answer):
        running["now"] += 1
        running["max"] = max(running["max"], running["now"])
        await asyncio.sleep(0.01)
        running["now"] -= 1
        return float(completion[-1]["content"] == answer)

    rubric = Rubric(funcs=[slow, quarter], weights=[1.0, 2.0])
    completions = [[{"role": "assistant", "content": c}] for c in ("4", "5", "4")]
    args = ([PROMPT] * 3, completions, ["4"] * 3, [{}, {}, {}], ["default"] * 3, [{}] * 3)
    scores = await rubric.score_rollouts(*args, max_concurrent=2)
    assert scores.reward == [1.5, 0.5, 1.5]
    assert scores.metrics == {"slow": [1.0, 0.0, 1.0], "quarter": [0.25, 0.25, 0.25]}
    assert running["max"] == 2
    unweighted = await rubric.score_rollouts(*args, apply_weights=False)
    assert unweighted.reward == [1.25, 0.25, 1.25]


async def test_score_rollouts_empty_and_mismatched():
    rubric = Rubric(funcs=[exact, quarter])
    empty = await rubric.score_rollouts([], [], [], [], [], [])
    assert empty.reward == [] and empty.metrics == {"exact": [], "quarter": []}
    with pytest.raises(ValueError, match="2 prompts but 1 answers"):
        await rubric.score_rollouts([PROMPT] * 2, [COMPLETION] * 2, ["4"], [{}, {}], None, None)


# ------------------------------------------------------------------ failures


async def test_raising_function_scores_zero_is_recorded_counted_and_logged_once(caplog):
    def broken(answer):
        raise ValueError(f"bad answer {answer}")

    rubric = Rubric(funcs=[exact, broken])
    states = [{}, {}, {}]
    with caplog.at_level(logging.DEBUG, logger="verifiers.rubrics"):
        scores = [await rubric.score_rollout(PROMPT, COMPLETION, "4", s) for s in states]
    assert [s.reward for s in scores] == [1.0, 1.0, 1.0]
    assert scores[0].metrics == {"exact": 1.0, "broken": 0.0}
    assert states[2]["scoring_errors"] == {"broken": "ValueError: bad answer 4"}
    assert rubric.failure_counts == {"broken": 3}
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    debugs = [r for r in caplog.records if r.levelno == logging.DEBUG and "raised" in r.getMessage()]
    assert len(errors) == 1 and errors[0].exc_info is not None and "broken" in errors[0].getMessage()
    assert len(debugs) == 2


async def test_a_new_exception_type_is_logged_again(caplog):
    calls = iter([ValueError("one"), KeyError("two")])

    def flaky():
        raise next(calls)

    rubric = Rubric(funcs=[flaky])
    with caplog.at_level(logging.ERROR, logger="verifiers.rubrics"):
        await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
        await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 2


async def test_non_numeric_result_is_a_recorded_failure():
    rubric = Rubric(funcs=[lambda: None])
    state = {}
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", state)
    assert score.reward == 0.0
    expected = "RewardFunctionError: reward function '<lambda>' returned None"
    assert state["scoring_errors"]["<lambda>"].startswith(expected)


async def test_base_exceptions_are_not_swallowed():
    class Stop(BaseException):
        pass

    def stopper():
        raise Stop()

    with pytest.raises(Stop):
        await Rubric(funcs=[stopper]).score_rollout(PROMPT, COMPLETION, "4", {})


# ------------------------------------------------------------------- State era


async def test_score_rollout_with_a_state_writes_reward_and_metrics():
    rubric = Rubric(funcs=[exact, quarter], weights=[1.0, 2.0])
    state = make_state()
    assert await rubric.score_rollout(state) is None
    assert state["reward"] == 1.5 and state["metrics"] == {"exact": 1.0, "quarter": 0.25}
    assert "advantage" not in state
    other = make_state(content="5")
    await rubric.score_rollout(state=other)
    assert other["reward"] == 0.5


async def test_score_group_advantages_and_trajectory_steps():
    rubric = Rubric(funcs=[exact])
    states = [make_state(content=c) for c in ("4", "5", "4", "4")]
    states[0]["trajectory"] = [{"reward": None, "advantage": None}, {"reward": 0.3, "advantage": None}]
    await rubric.score_group(states)
    assert [s["reward"] for s in states] == [1.0, 0.0, 1.0, 1.0]
    assert [s["advantage"] for s in states] == [0.25, -0.75, 0.25, 0.25]
    assert states[0]["trajectory"] == [{"reward": 1.0, "advantage": 0.25}, {"reward": 0.3, "advantage": 0.25}]
    assert all(s["timing"]["scoring_ms"] > 0 for s in states)
    await rubric.score_group([])  # nothing to do, no error


async def test_state_era_injects_example_id_and_dataset_columns():
    seen = []

    def f(example_id, difficulty, info, task):
        seen.append((example_id, difficulty, info, task))
        return 1.0

    await Rubric(funcs=[f]).score_group([make_state(example_id=7, difficulty="hard")])
    assert seen == [(7, "hard", {}, "default")]
    await Rubric(funcs=[f]).score_group([make_state(example_id=8)], difficulty="easy")  # call kwargs are offered too
    assert seen[-1] == (8, "easy", {}, "default")


async def test_group_function_is_called_once_per_group_with_plural_arguments():
    calls = []

    def ranked(completions, answers, states, parser) -> list[float]:
        calls.append((len(completions), answers, parser))
        return [float(i) for i in range(len(completions))]

    rubric = Rubric(funcs=[ranked, exact], weights=[0.5, 1.0])
    states = [make_state(content=c) for c in ("4", "4", "5")]
    await rubric.score_group(states)
    assert calls == [(3, ["4", "4", "4"], rubric.parser)]
    assert [s["metrics"]["ranked"] for s in states] == [0.0, 1.0, 2.0]
    assert [s["reward"] for s in states] == [1.0, 1.5, 1.0]


async def test_group_function_with_wrong_length_fails_every_rollout():
    def short(completions) -> list[float]:
        return [1.0]

    rubric = Rubric(funcs=[short])
    states = [make_state(), make_state()]
    await rubric.score_group(states)
    assert [s["reward"] for s in states] == [0.0, 0.0]
    assert "returned 1 scores for 2 rollouts" in states[1]["scoring_errors"]["short"]
    assert rubric.failure_counts["short"] == 2


async def test_group_function_in_tuple_era_sees_a_group_of_one():
    def group(completions):
        return [float(len(completions))]

    score = await Rubric(funcs=[group]).score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.reward == 1.0


async def test_cleanup_and_teardown_run_marked_methods():
    class Tracked(Rubric):
        log: list

        @cleanup
        async def forget(self, state):
            state["cleaned"] = True

        @teardown
        def close(self):
            self.log.append("closed")

    rubric = Tracked(funcs=[exact], log=[])
    state = make_state()
    await rubric.cleanup(state)
    await rubric.teardown()
    assert state["cleaned"] is True and rubric.log == ["closed"]
