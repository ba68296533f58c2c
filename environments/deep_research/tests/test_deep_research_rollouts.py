"""End-to-end rollouts of the deep-research environment against the scripted OpenAI-compatible server.

Scripted policies stand in for the model: one researches (search, open, open) and finishes with the gold
answer, one finishes wrong, one never finishes, one fumbles its calls before finishing right.
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai
from deep_research import load_environment

from verifiers.testing import Reply, ScriptedRequest, ScriptedServer
from verifiers.testing.policies import content_text


def _call(turn: int, name: str, **arguments: Any) -> Reply:
    return Reply("", tool_calls=[{"id": f"call_{turn}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(arguments)}}])


class Researcher:
    """Plays each question by its mode: ``gold``, ``wrong``, ``never`` or ``fumble``."""

    def __init__(self, rows: list[dict[str, Any]], modes: list[str]) -> None:
        self.plan = {row["question"]: (mode, row) for row, mode in zip(rows, modes)}

    def __call__(self, request: ScriptedRequest) -> Reply:
        mode, row = self.plan[request.last_user_text]
        turn = request.assistant_turns
        first, last = row["info"]["supporting_doc_ids"]
        if mode == "never":
            return _call(turn, "search", query=f"{row['question'][:40]} {turn}")
        if mode == "fumble":  # every kind of bad call first; each is answered and the rollout goes on
            bad = [_call(turn, "finish", answer=""), _call(turn, "open", doc_id="library/no-such-page"),
                   _call(turn, "search", query='NEAR( AND * "'), Reply("", tool_calls=[
                       {"id": f"call_{turn}", "type": "function", "function": {"name": "open", "arguments": "{"}}])]
            if turn < len(bad):
                return bad[turn]
            turn -= len(bad)
        steps = [_call(turn, "search", query=row["question"][:120]), _call(turn, "open", doc_id=first),
                 _call(turn, "open", doc_id=last),
                 _call(turn, "finish", answer=row["answer"] if mode != "wrong" else "no idea")]
        return steps[min(turn, len(steps) - 1)]


def _by_question(outputs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["prompt"][-1]["content"]: o for o in outputs}


async def test_rollouts_reward_the_gold_answer_and_nothing_else() -> None:
    env = load_environment(num_eval_examples=4, max_turns=8)
    rows = list(env.get_eval_dataset())
    modes = ["gold", "wrong", "never", "fumble"]
    with ScriptedServer(Researcher(rows, modes), port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        results = await env.evaluate(client, "scripted", num_examples=4, rollouts_per_example=1)
    outputs = _by_question(results["outputs"])
    gold, wrong, never, fumble = (outputs[row["question"]] for row in rows)
    assert [o["error"] for o in (gold, wrong, never, fumble)] == [None] * 4
    assert [o["reward"] for o in (gold, wrong, never, fumble)] == [1.0, 0.0, 0.0, 1.0]

    # The researcher: four turns, both supporting documents opened, the rollout ended by the finish call itself.
    assert gold["stop_condition"] == "called_finish" and gold["num_turns"] == 4
    assert gold["metrics"]["supporting_docs_opened"] == 1.0 and gold["metrics"]["finished"] == 1.0
    assert gold["metrics"]["answer_f1"] == 1.0
    assert {k: gold["metrics"][k] for k in ("search_calls", "open_calls", "finish_calls")} == \
        {"search_calls": 1.0, "open_calls": 2.0, "finish_calls": 1.0}
    tool_replies = [content_text(m["content"]) for m in gold["completion"] if m["role"] == "tool"]
    assert re.match(r"1\. doc_id: ", tool_replies[0])
    first, last_doc = rows[0]["info"]["supporting_doc_ids"]
    assert len(tool_replies) == 3
    assert tool_replies[1].startswith(f"doc_id: {first}\n") and tool_replies[2].startswith(f"doc_id: {last_doc}\n")
    last = gold["completion"][-1]
    assert last["role"] == "assistant" and last["tool_calls"][0]["function"]["name"] == "finish"

    assert wrong["stop_condition"] == "called_finish" and wrong["metrics"]["finished"] == 1.0
    assert wrong["metrics"]["exact_match"] == 0.0 and wrong["metrics"]["supporting_docs_opened"] == 1.0

    # Never finishing: the turn limit ends it, with no answer.
    assert never["stop_condition"] == "max_turns_reached" and never["num_turns"] == 8
    assert never["metrics"]["finished"] == 0.0 and never["metrics"]["search_calls"] == 8.0

    # Bad calls are answered in words; the one with broken JSON is counted as a tool error.
    replies = [content_text(m["content"]) for m in fumble["completion"] if m["role"] == "tool"]
    assert replies[0].startswith("Error: answer is empty")
    assert replies[1].startswith("Error: no document has the id 'library/no-such-page'")
    assert replies[2].startswith(("1. doc_id: ", "No document matches"))
    assert "not valid JSON" in replies[3] and fumble["tool_errors"] == 1
    # Its finish came in the last allowed turn: an answer, not a timeout.
    assert fumble["num_turns"] == 8 and fumble["stop_condition"] == "called_finish"


def _grader(request: ScriptedRequest) -> Reply:
    """A judge that reads its own prompt: yes when the submitted answer is the reference, word for word."""
    prompt = request.last_user_text
    reference = re.search(r"Reference answer:\n(.*)\n", prompt).group(1)
    submitted = re.search(r"Submitted answer:\n(.*)\n", prompt).group(1)
    return Reply("Yes." if submitted.strip() == reference.strip() else "no")


async def test_a_judge_scores_the_submitted_answer_and_exact_match_stays_a_metric() -> None:
    with ScriptedServer(_grader, port=0).running() as judge_url:
        env = load_environment(num_eval_examples=3, max_turns=5, judge_model="grader", judge_base_url=judge_url)
        rows = list(env.get_eval_dataset())
        with ScriptedServer(Researcher(rows, ["gold", "wrong", "never"]), port=0).running() as base_url:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
            results = await env.evaluate(client, "scripted", num_examples=3, rollouts_per_example=1)
    outputs = _by_question(results["outputs"])
    gold, wrong, never = (outputs[row["question"]] for row in rows)
    assert [o["reward"] for o in (gold, wrong, never)] == [1.0, 0.0, 0.0]
    assert [o["metrics"]["judged_correct"] for o in (gold, wrong, never)] == [1.0, 0.0, 0.0]
    assert [o["metrics"]["exact_match"] for o in (gold, wrong, never)] == [1.0, 0.0, 0.0]
    assert all(not o["scoring_errors"] for o in (gold, wrong, never))
