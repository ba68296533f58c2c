"""LengthPenaltyRubric and add_length_instruction: measured lengths, hand-computed rewards, bad arguments, e2e."""

from __future__ import annotations

import json
import logging

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.rubrics.length_penalty import BUDGET_INSTRUCTION, measure_length
from verifiers.state import State

PROMPT = [{"role": "user", "content": "2+2?"}]


def starts_right(completion, answer) -> float:
    return float(completion[-1]["content"].startswith(answer))


def _state(content: str = "4", *, usage: int = 0, token_ids: list[list[int]] | None = None,
           info: dict | None = None) -> State:
    completion = [{"role": "assistant", "content": content}]
    state = State.new(prompt=PROMPT, answer="4", info=info)
    state["completion"] = completion
    state["total_completion_tokens"] = usage
    for ids in token_ids or []:
        state["trajectory"].append({"prompt": PROMPT, "completion": completion, "tokens": {"completion_ids": ids}})
    return state


# -- measuring ---------------------------------------------------------------------------------------------


def test_token_ids_beat_usage_which_beats_the_text_estimate() -> None:
    completion = [{"role": "assistant", "content": "abcdefgh"}]
    assert measure_length(completion, _state("abcdefgh", usage=9, token_ids=[[1, 2, 3], [4, 5]])) == (5.0, "token_ids")
    assert measure_length(completion, _state("abcdefgh", usage=9)) == (9.0, "usage")
    assert measure_length(completion, _state("abcdefgh")) == (2.0, "estimate")  # 8 chars / 4
    assert measure_length(completion, None, chars_per_token=2.0) == (4.0, "estimate")


def test_only_the_models_text_counts() -> None:
    completion = [
        {"role": "assistant", "content": "one two", "reasoning_content": "three"},
        {"role": "tool", "content": "a tool result that is long"},
        {"role": "user", "content": "the environment speaks"},
        {"role": "assistant", "content": [{"type": "text", "text": " four"}],
         "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ]
    # "one two" + "three" + " four" + "{}" = 19 characters; words split on whitespace
    assert measure_length(completion, unit="chars") == (19.0, "chars")
    assert measure_length(completion, unit="words") == (3.0, "words")  # "one", "twothree", "four{}"
    assert measure_length("plain completion text", unit="chars").value == 21.0


# -- scoring, by hand ----------------------------------------------------------------------------------------


async def test_wrapping_a_task_rubric_subtracts_alpha_times_the_deviation() -> None:
    rubric = vf.LengthPenaltyRubric(rubric=vf.Rubric(funcs=[starts_right]), target_tokens=10, alpha=0.05)
    longer, shorter = _state(usage=18), _state(usage=4)
    await rubric.score_group([longer, shorter])
    assert longer["reward"] == pytest.approx(1.0 - 0.05 * 8)  # 0.6
    assert shorter["reward"] == pytest.approx(1.0 - 0.05 * 6)  # 0.7: too short costs too ("both")
    assert longer["metrics"] == pytest.approx({"starts_right": 1.0, "length_penalty": -0.4,
                                               "completion_length": 18.0, "target_length": 10.0})
    assert longer["advantage"] == pytest.approx(-0.05)


async def test_the_floor_bounds_the_total_and_over_only_charges_going_over() -> None:
    rubric = vf.LengthPenaltyRubric(rubric=vf.Rubric(funcs=[starts_right]), target_tokens=10, alpha=0.05,
                                    floor=0.0, penalize="over")
    way_over, under = _state(usage=40), _state(usage=4)
    await rubric.score_group([way_over, under])
    assert way_over["reward"] == 0.0  # max(0.0, 1.0 - 0.05 * 30)
    assert way_over["metrics"]["length_penalty"] == pytest.approx(-1.5)  # the metric is before the floor
    assert under["reward"] == 1.0 and under["metrics"]["length_penalty"] == 0.0


async def test_a_penalty_only_rubric_composes_through_a_rubric_group() -> None:
    penalty = vf.LengthPenaltyRubric(target_tokens=5, alpha=0.1, floor=-1.0)
    group = vf.RubricGroup([vf.Rubric(funcs=[starts_right]), penalty])
    near, far = _state(usage=8), _state(usage=50)
    await group.score_group([near, far])
    assert near["reward"] == pytest.approx(1.0 - 0.3)
    assert far["reward"] == pytest.approx(1.0 - 1.0)  # the floor bounds the penalty term: max(-1.0, -4.5)
    assert far["metrics"]["length_penalty"] == pytest.approx(-4.5)


async def test_a_rows_own_target_beats_the_fixed_one_in_both_eras() -> None:
    rubric = vf.LengthPenaltyRubric(target_tokens=100, alpha=0.5, unit="chars")
    state = _state("abcdef", info={"target_tokens": 4})
    await rubric.score_rollout(state)
    assert state["reward"] == pytest.approx(-1.0)  # 6 chars, target 4
    column = _state("abcdef")
    column["input"] = {"prompt": PROMPT, "target_tokens": 2}  # a dataset column (State era)
    await rubric.score_rollout(column)
    assert column["reward"] == pytest.approx(-2.0)
    # tuple era: score_rollout(prompt, completion, answer, state, task, info)
    score = await rubric.score_rollout(PROMPT, [{"role": "assistant", "content": "abc"}], "4", {}, "default",
                                       {"target_tokens": 1})
    assert score.reward == pytest.approx(-1.0) and score.metrics["target_length"] == 1.0


async def test_a_row_without_a_target_fails_loudly_and_costs_nothing() -> None:
    rubric = vf.LengthPenaltyRubric(rubric=vf.Rubric(funcs=[starts_right]))
    state = _state(usage=50)
    await rubric.score_group([state])
    assert state["reward"] == 1.0
    assert rubric.failure_counts["length_penalty"] == 1
    assert "no length target" in state["scoring_errors"]["length_penalty"]


async def test_estimated_lengths_are_announced_once(caplog) -> None:
    rubric = vf.LengthPenaltyRubric(target_tokens=0, alpha=1.0)
    with caplog.at_level(logging.WARNING, logger="verifiers.rubrics.LengthPenaltyRubric"):
        first, second = _state("12345678"), _state("1234")
        await rubric.score_group([first, second])
    assert [first["reward"], second["reward"]] == [-2.0, -1.0]
    assert sum("estimated as characters" in r.getMessage() for r in caplog.records) == 1


# -- bad arguments ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"target_tokens": -1}, ValueError, "target_tokens must be a finite number >= 0, got -1"),
    ({"target_tokens": "512"}, TypeError, r"target_tokens must be a number \(of tokens\), got '512' \(str\)"),
    ({"target_tokens": True}, TypeError, "target_tokens must be a number"),
    ({"target_tokens": float("inf")}, ValueError, "finite"),
    ({"alpha": -0.1}, ValueError, "alpha must be a finite number >= 0"),
    ({"alpha": None}, TypeError, "alpha must be a number"),
    ({"floor": "low"}, TypeError, "floor must be a number"),
    ({"floor": float("nan")}, ValueError, "floor must be finite"),
    ({"penalize": "under"}, ValueError, r"penalize must be one of \['both', 'over'\]"),
    ({"unit": "bytes"}, ValueError, r"unit must be one of \['tokens', 'chars', 'words'\]"),
    ({"chars_per_token": 0}, ValueError, "chars_per_token must be > 0"),
    ({"target_key": ""}, TypeError, "target_key must be a non-empty string"),
    ({"rubric": starts_right}, TypeError, "rubric must be a vf.Rubric to wrap, got function"),
])
def test_bad_arguments_are_refused(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        vf.LengthPenaltyRubric(**kwargs)


async def test_a_bad_per_row_target_is_refused_with_the_reason() -> None:
    rubric = vf.LengthPenaltyRubric(alpha=1.0)
    state = _state(usage=3, info={"target_tokens": "many"})
    await rubric.score_group([state])
    assert state["reward"] == 0.0
    assert "info['target_tokens'] must be a number" in state["scoring_errors"]["length_penalty"]


def test_bad_instruction_arguments_are_refused() -> None:
    ds = Dataset.from_list([{"question": "q"}])
    with pytest.raises(ValueError, match=">= 0"):
        vf.add_length_instruction(ds, -5)
    with pytest.raises(TypeError, match="must be a number"):
        vf.add_length_instruction(ds, ["a lot"])
    with pytest.raises(ValueError, match="empty sequence"):
        vf.add_length_instruction(ds, [])
    with pytest.raises(ValueError, match=r"\{target\} placeholder"):
        vf.add_length_instruction(ds, 10, template="Think briefly.")
    with pytest.raises(ValueError, match="has no info\\['target_tokens'\\]"):
        vf.add_length_instruction(ds)
    with pytest.raises(ValueError, match="needs a 'prompt' or a 'question' column"):
        vf.add_length_instruction(Dataset.from_list([{"text": "q"}]), 10)


# -- the prompt helper ------------------------------------------------------------------------------------------


def test_instructions_go_into_the_question_or_the_last_user_message() -> None:
    ds = vf.add_length_instruction(Dataset.from_list([{"question": "2+2?", "info": {"src": "a"}}]), 256,
                                   template=BUDGET_INSTRUCTION)
    assert ds[0]["question"] == "2+2?\n\nSpend at most 256 tokens thinking before you give your final answer."
    assert ds[0]["info"] == {"src": "a", "target_tokens": 256}
    chat = Dataset.from_list([{"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
                               "info": json.dumps({"src": "b"})}])
    out = vf.add_length_instruction(chat, 64, template="Budget: {target}.")
    assert out[0]["prompt"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "hi\n\nBudget: 64."}]
    assert json.loads(out[0]["info"]) == {"src": "b", "target_tokens": 64}  # a JSON info stays JSON
    text = vf.add_length_instruction(Dataset.from_list([{"prompt": "Q: 1+1\nA:"}]), 8, template="[{target}]")
    assert text[0]["prompt"] == "Q: 1+1\nA:\n\n[8]"


def test_sampled_targets_are_repeatable_and_drawn_from_the_candidates() -> None:
    ds = Dataset.from_list([{"question": f"q{i}"} for i in range(40)])
    first = vf.add_length_instruction(ds, [128, 512, 2048], seed=3)
    again = vf.add_length_instruction(ds, [128, 512, 2048], seed=3)
    targets = [row["info"]["target_tokens"] for row in first]
    assert targets == [row["info"]["target_tokens"] for row in again]
    assert set(targets) == {128, 512, 2048}
    assert all(row["question"].endswith(f"Spend about {row['info']['target_tokens']} tokens thinking before you "
                                        "give your final answer.") for row in first)
    existing = vf.add_length_instruction(Dataset.from_list([{"question": "q", "info": {"target_tokens": 7}}]))
    assert existing[0]["question"].startswith("q\n\nSpend about 7 tokens")


# -- end to end, against the scripted server -------------------------------------------------------------------


def _padded_policy(seen: list[str]):
    """Answers the sum, then pads: 2+2 gets a 17-character reply (18 tokens with the end token), 3+5 one of 1."""

    def policy(request) -> str:
        seen.append(request.last_user_text)
        return "4 because 2 and 2" if "2+2?" in request.last_user_text else "8"

    return policy


def _env(rubric: vf.Rubric) -> vf.SingleTurnEnv:
    rows = [{"question": "2+2?", "answer": "4", "info": {"target_tokens": 10}},
            {"question": "3+5?", "answer": "8", "info": {"target_tokens": 30}}]
    return vf.SingleTurnEnv(dataset=vf.add_length_instruction(Dataset.from_list(rows)), rubric=rubric)


async def test_the_penalty_is_applied_to_real_rollouts(serve, client_for) -> None:
    seen: list[str] = []
    client = client_for(serve(_padded_policy(seen)))
    rubric = vf.LengthPenaltyRubric(rubric=vf.Rubric(funcs=[starts_right]), alpha=0.05, floor=0.0)
    results = await _env(rubric).evaluate(client, "m")
    assert "2+2?\n\nSpend about 10 tokens thinking before you give your final answer." in seen
    # 18 tokens for target 10: 1 - 0.05 * 8 = 0.6; 2 tokens for target 30: max(0, 1 - 0.05 * 28) = 0
    assert results.reward == pytest.approx([0.6, 0.0])
    assert results.metrics["completion_length"] == [18.0, 2.0]
    assert results.metrics["target_length"] == [10.0, 30.0]
    assert results.metrics["length_penalty"] == pytest.approx([-0.4, -1.4])
    assert results.metrics["starts_right"] == [1.0, 1.0]


async def test_token_ids_from_the_server_measure_the_same(serve, client_for) -> None:
    client = client_for(serve(_padded_policy([])))
    penalty = vf.LengthPenaltyRubric(alpha=0.05, penalize="over")
    env = _env(vf.RubricGroup([vf.Rubric(funcs=[starts_right]), penalty]))
    results = await env.evaluate(client, "m", sampling_args={"extra_body": {"return_token_ids": True}})
    assert [len(s["trajectory"][0]["tokens"]["completion_ids"]) for s in results.state] == [18, 2]
    assert results.reward == pytest.approx([0.6, 1.0])  # under the budget costs nothing with "over"
