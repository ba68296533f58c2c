"""EnvGroup: routing by task, metric filling, datasets concatenated with task columns."""

from __future__ import annotations

from datasets import Dataset

import verifiers as vf


def starts_a(completion) -> float:
    return float(completion[-1]["content"].startswith("a"))


def length(completion) -> float:
    return float(len(completion[-1]["content"]))


def _env(words: list[str], func) -> vf.SingleTurnEnv:
    ds = Dataset.from_list([{"question": w, "answer": w, "info": {"src": w}} for w in words])
    return vf.SingleTurnEnv(dataset=ds, rubric=vf.Rubric(funcs=[func]))


async def test_routing_and_metric_filling(serve, client_for) -> None:
    client = client_for(serve("echo"))
    group = vf.EnvGroup([_env(["ab", "ba"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    assert group.get_dataset()["task"] == ["letters", "letters", "sizes"]
    assert group.get_dataset()["example_id"] == [0, 1, 2]
    results = await group.evaluate(client, "m")
    assert results.reward == [1.0, 0.0, 3.0]
    # each rollout reports its own environment's metrics (0.3.0); the parallel-list view fills with 0.0
    assert results["outputs"][0]["metrics"] == {"starts_a": 1.0, "num_turns": 1.0}
    assert results["outputs"][2]["metrics"] == {"length": 3.0, "num_turns": 1.0}
    assert results.metrics == {"length": [0.0, 0.0, 3.0], "num_turns": [1.0] * 3, "starts_a": [1.0, 0.0, 0.0]}
    assert results.info[0] == {"src": "ab"}


async def test_group_rubric_fills_the_union_for_direct_callers() -> None:
    group = vf.EnvGroup([_env(["ab"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    state = {"prompt": [], "completion": [{"role": "assistant", "content": "abc"}], "answer": "", "task": "letters",
             "info": {}, "timing": {"generation_ms": 0.0, "scoring_ms": 0.0, "total_ms": 0.0}}
    await group.rubric.score_group([state])
    assert state["metrics"] == {"length": 0.0, "starts_a": 1.0}  # the 0.1.x union, zero-filled


async def test_group_rubric_scores_a_tuple_era_call_with_the_tasks_rubric() -> None:
    group = vf.EnvGroup([_env(["ab"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    reply = [{"role": "assistant", "content": "abc"}]
    score = await group.rubric.score_rollout([], reply, "", {}, "sizes", {})
    assert (score.reward, score.metrics) == (3.0, {"length": 3.0, "starts_a": 0.0})
    by_keyword = await group.rubric.score_rollout([], reply, "", {}, task="letters")
    assert (by_keyword.reward, by_keyword.metrics) == (1.0, {"length": 0.0, "starts_a": 1.0})
    unknown = await group.rubric.score_rollout([], reply, "", {}, "nobody", {})  # bad input: scores 0, says so
    assert (unknown.reward, unknown.metrics) == (0.0, {"length": 0.0, "starts_a": 0.0})


def test_bad_groups_are_rejected() -> None:
    import pytest

    with pytest.raises(ValueError):
        vf.EnvGroup([])
    with pytest.raises(ValueError):
        vf.EnvGroup([_env(["a"], length), _env(["b"], length)], env_names=["same", "same"])


# -- rows that carry their own task label (as the bundled environments' rows do) -------------------------


def exact_sum(completion, answer) -> float:
    return float(completion[-1]["content"].strip() == answer)


def exact_reversal(completion, answer) -> float:
    return float(completion[-1]["content"] == answer)


def _labelled_env(rows: list[tuple[str, str]], label: str, func) -> vf.SingleTurnEnv:
    """A bundled-style environment: every row carries its own ``task`` label."""
    ds = Dataset.from_list([{"question": q, "answer": a, "task": label} for q, a in rows])
    return vf.SingleTurnEnv(dataset=ds, eval_dataset=ds, rubric=vf.Rubric(funcs=[func]))


def _solver(request) -> str:
    """Sums ``a+b`` questions, reverses anything else: right for both environments' rows."""
    text = request.last_user_text
    if "+" in text:
        a, b = text.split("+")
        return str(int(a) + int(b))
    return text[::-1]


async def test_rows_with_their_own_task_are_relabelled_and_routed_to_their_env(serve, client_for) -> None:
    client = client_for(serve(_solver))
    # The sums rows say "reverse", the other environment's name; the reversal rows say "arithmetic", no name at all.
    sums = _labelled_env([("12+30", "42"), ("5+6", "11")], "reverse", exact_sum)
    reversal = _labelled_env([("abc", "cba")], "arithmetic", exact_reversal)
    group = vf.EnvGroup([sums, reversal], env_names=["sums", "reverse"])
    assert group.get_dataset()["task"] == ["sums", "sums", "reverse"]
    assert group.get_eval_dataset()["task"] == ["sums", "sums", "reverse"]
    results = await group.evaluate(client, "m", rollouts_per_example=2)
    assert [o["task"] for o in results["outputs"]] == ["sums"] * 4 + ["reverse"] * 2
    assert results.reward == [1.0] * 6  # each row ran and was scored by its own environment
    assert "exact_sum" in results["outputs"][0]["metrics"] and "exact_reversal" not in results["outputs"][0]["metrics"]
    assert "exact_reversal" in results["outputs"][-1]["metrics"]


async def test_the_same_label_in_both_envs_routes_by_env(serve, client_for) -> None:
    client = client_for(serve(_solver))
    group = vf.EnvGroup([_labelled_env([("1+2", "3")], "arithmetic", exact_sum),
                         _labelled_env([("xy", "yx")], "arithmetic", exact_reversal)])
    assert group.get_dataset()["task"] == ["env_0", "env_1"]
    results = await group.evaluate(client, "m")
    assert results.reward == [1.0, 1.0]
    assert [sorted(o["metrics"]) for o in results["outputs"]] == [["exact_sum", "num_turns"],
                                                                  ["exact_reversal", "num_turns"]]


async def test_a_task_naming_no_env_is_refused_before_any_model_call(serve, client_for) -> None:
    import pytest

    calls: list[str] = []

    def policy(request) -> str:
        calls.append(request.last_user_text)
        return "x"

    client = client_for(serve(policy))
    group = vf.EnvGroup([_env(["ab"], starts_a), _env(["xyz"], length)], env_names=["letters", "sizes"])
    prompt = [{"role": "user", "content": "ab"}]
    good = {"prompt": prompt, "answer": "", "task": "letters", "example_id": 0}
    message = r"no environment for task 'arithmetic'; its environments are \['letters', 'sizes'\]"
    with pytest.raises(vf.UsageError, match=message):
        await group.generate([good, {**good, "task": "arithmetic", "example_id": 1}], client, "m")
    with pytest.raises(vf.UsageError, match="no environment for task 'default'"):
        await group.generate({"prompt": [prompt]}, client, "m")  # no task column at all
    with pytest.raises(vf.UsageError, match="no environment for task 'arithmetic'"):
        await group.rollout({**good, "task": "arithmetic"}, client, "m")
    with pytest.raises(vf.UsageError, match="no environment for task 'arithmetic'"):
        group.get_env_for_task("arithmetic")
    assert calls == []  # nothing ran on the first environment instead
    results = await group.generate([good], client, "m")
    assert results.reward == [0.0] and calls == ["ab"]  # a known task still runs


def test_set_max_retries_reaches_every_member_and_rejects_bad_counts() -> None:
    import pytest

    members = [_env(["ab"], starts_a), _env(["xyz"], length)]
    group = vf.EnvGroup(members, env_names=["letters", "sizes"])
    group.set_max_retries(0)
    assert [env.retry.max_retries for env in (group, *members)] == [0, 0, 0]
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(vf.errors.UsageError, match="max_retries must be an integer >= 0"):
            group.set_max_retries(bad)  # type: ignore[arg-type]
    assert members[0].retry.max_retries == 0
