"""Training samples from trajectories whose token ids come from a real scripted server."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from verifiers.errors import UsageError
from verifiers.state import State
from verifiers.testing import CHATML, QWEN3_STYLE, ByteTokenizer, Reply, ScriptedRequest, ScriptedServer
from verifiers.tokens import TrainingSample, process_env_results_vllm, step_tokens, trajectory_to_samples

WITH_IDS = {"logprobs": True, "extra_body": {"return_token_ids": True}}
IDS_IN_LOGPROBS_ONLY = {"logprobs": True, "extra_body": {"return_tokens_as_token_ids": True}}
PROMPT = [{"role": "system", "content": "Think, then answer."}, {"role": "user", "content": "question 1"}]
USER_TURNS = [[{"role": "user", "content": "question 2"}], [{"role": "user", "content": "question 3"}]]
ADD_TOOL = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}


def thinker(request: ScriptedRequest) -> Reply:
    k = request.assistant_turns + 1
    return Reply(f"<think>\nreasoning {k}\n</think>\n\nturn {k}")


def thinking_tool_user(request: ScriptedRequest) -> Reply:
    if request.assistant_turns == 0:
        call = {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
        return Reply("<think>\nI should add\n</think>\n\n", tool_calls=[call])
    return Reply("<think>\nthe tool said 5\n</think>\n\nThe sum is 5.")


def rollout(template: str, policy: Any, env_turns: list[list[dict]], sampling: dict = WITH_IDS,
            tools: list | None = None, prompt: list | None = None) -> tuple[list[dict], list[dict]]:
    """Run a chat rollout against a real server; returns the final messages and the trajectory."""
    messages = list(prompt or PROMPT)
    trajectory = []
    with ScriptedServer(policy, tokenizer=ByteTokenizer(template)).running() as base_url:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            for env_messages in [*env_turns, None]:
                extra = {"tools": tools} if tools else {}
                response = client.chat.completions.create(model="m", messages=messages, **sampling, **extra)
                assistant = response.choices[0].message.model_dump(exclude_none=True)
                trajectory.append({"prompt": list(messages), "completion": [assistant], "response": response,
                                   "tokens": step_tokens(response)})
                messages = messages + [assistant] + (env_messages or [])
                if env_messages is None:
                    break
    return messages, trajectory


def model_tokens(trajectory: list[dict]) -> list[tuple[int, float]]:
    return [pair for step in trajectory
            for pair in zip(step["tokens"]["completion_ids"], step["tokens"]["completion_logprobs"])]


def trained_tokens(samples: list[TrainingSample]) -> list[tuple[int, float]]:
    return [(i, lp) for s in samples
            for i, m, lp in zip(s.completion_ids, s.completion_mask, s.completion_logprobs) if m == 1]


def assert_well_formed(sample: TrainingSample) -> None:
    assert len(sample.prompt_ids) == len(sample.prompt_mask) and set(sample.prompt_mask) <= {0}
    assert len(sample.completion_ids) == len(sample.completion_mask) == len(sample.completion_logprobs)


@pytest.fixture(scope="module")
def chatml_chat():
    return rollout(CHATML, thinker, USER_TURNS)


@pytest.fixture(scope="module")
def qwen3_chat():
    return rollout(QWEN3_STYLE, thinker, USER_TURNS)


def test_prefix_monotone_chat_merges_into_one_sample(chatml_chat):
    messages, trajectory = chatml_chat
    (sample,) = trajectory_to_samples(trajectory)
    assert_well_formed(sample)
    tok = ByteTokenizer(CHATML)
    assert sample.prompt_ids == tok.apply_chat_template(PROMPT, add_generation_prompt=True)
    # The sample is the whole conversation as the template renders it (bar the newline after the last turn).
    full = tok.apply_chat_template(messages)
    assert sample.prompt_ids + sample.completion_ids + tok.encode("\n") == full
    assert trained_tokens([sample]) == model_tokens(trajectory)
    env = [(i, lp) for i, m, lp in zip(sample.completion_ids, sample.completion_mask, sample.completion_logprobs)
           if m == 0]
    assert env and all(lp == 0.0 for _, lp in env)
    assert "question 2" in tok.decode([i for i, _ in env])


def test_history_rewriting_template_splits_into_one_sample_per_user_turn(qwen3_chat):
    _, trajectory = qwen3_chat
    samples = trajectory_to_samples(trajectory)
    assert len(samples) == 3
    for sample, step in zip(samples, trajectory):
        assert_well_formed(sample)
        assert sample.prompt_ids == step["tokens"]["prompt_ids"]
        assert sample.completion_ids == step["tokens"]["completion_ids"]
    assert trained_tokens(samples) == model_tokens(trajectory)
    assert "reasoning 1" not in ByteTokenizer().decode(samples[1].prompt_ids)


def test_tool_results_do_not_rewrite_history_even_with_think_blocks():
    tool_turn = [{"role": "tool", "tool_call_id": "call_0", "content": "5"}]
    _, trajectory = rollout(QWEN3_STYLE, thinking_tool_user, [tool_turn], tools=[ADD_TOOL])
    assert trajectory[0]["response"].choices[0].message.tool_calls
    (sample,) = trajectory_to_samples(trajectory)
    assert trained_tokens([sample]) == model_tokens(trajectory)


def test_env_tokens_train_when_not_masked(chatml_chat):
    _, trajectory = chatml_chat
    masked, = trajectory_to_samples(trajectory, mask_env_responses=True)
    unmasked, = trajectory_to_samples(trajectory, mask_env_responses=False)
    assert unmasked.completion_ids == masked.completion_ids
    assert unmasked.completion_logprobs == masked.completion_logprobs
    assert set(unmasked.completion_mask) == {1} and 0 in masked.completion_mask


@pytest.mark.parametrize("template", [CHATML, QWEN3_STYLE])
def test_missing_prompt_ids_are_rebuilt_with_the_tokenizer(template):
    _, with_ids = rollout(template, thinker, USER_TURNS)
    _, without = rollout(template, thinker, USER_TURNS, sampling=IDS_IN_LOGPROBS_ONLY)
    assert all(step["tokens"]["prompt_ids"] == [] for step in without)
    rebuilt = trajectory_to_samples(without, tokenizer=ByteTokenizer(template))
    assert rebuilt == trajectory_to_samples(with_ids)
    with pytest.raises(UsageError, match="no tokenizer"):
        trajectory_to_samples(without)


def test_steps_without_tokens_or_with_inconsistent_tokens_raise(chatml_chat):
    _, trajectory = chatml_chat
    with pytest.raises(UsageError, match="step 0 has no token ids"):
        trajectory_to_samples([{"prompt": PROMPT, "response": None}])
    broken = dict(trajectory[0], tokens={**trajectory[0]["tokens"], "completion_logprobs": [0.0]})
    with pytest.raises(UsageError, match="differ in length"):
        trajectory_to_samples([broken])


def test_tokens_are_read_from_the_response_when_the_step_has_none(chatml_chat):
    _, trajectory = chatml_chat
    bare = [{k: v for k, v in step.items() if k != "tokens"} for step in trajectory]
    assert trajectory_to_samples(bare) == trajectory_to_samples(trajectory)


# -- process_env_results_vllm -------------------------------------------------------------


def state_of(messages: list[dict], trajectory: list[dict], prompt: list | str = PROMPT, **extra: Any) -> State:
    state = State.new(prompt=prompt)
    state.update(completion=messages[len(prompt):], trajectory=trajectory,
                 responses=[step["response"] for step in trajectory], **extra)
    return state


def process(states: list[State], tokenizer: ByteTokenizer, rewards: list[float] | None = None, **kwargs: Any):
    return process_env_results_vllm(
        [s["prompt"] for s in states], [s["completion"] for s in states], states,
        rewards or [float(i + 1) for i in range(len(states))], tokenizer, **kwargs,
    )


def test_one_row_per_rollout_when_the_template_is_prefix_monotone(chatml_chat):
    messages, trajectory = chatml_chat
    tok = ByteTokenizer(CHATML)
    out = process([state_of(messages, trajectory)] * 2, tok, mask_env_responses=True)
    assert out.rollout_index == [0, 1] and out.rewards == [1.0, 2.0]
    # Exactly the v0.1.5 layout: templated prompt, then server tokens and masked env tokens in order.
    assert out.prompt_ids[0] == tok.apply_chat_template(PROMPT, add_generation_prompt=True)
    assert out.prompt_mask[0] == [0] * len(out.prompt_ids[0])
    first_reply = trajectory[0]["tokens"]["completion_ids"]
    assert out.completion_ids[0][: len(first_reply)] == first_reply
    env_start = len(first_reply)
    env_ids = trajectory[1]["tokens"]["prompt_ids"][len(out.prompt_ids[0]) + env_start :]
    assert out.completion_ids[0][env_start : env_start + len(env_ids)] == env_ids
    assert out.completion_mask[0][env_start : env_start + len(env_ids)] == [0] * len(env_ids)
    unmasked = process([state_of(messages, trajectory)], tok, mask_env_responses=False)
    assert set(unmasked.completion_mask[0]) == {1}


def test_rollouts_split_by_a_rewriting_template_repeat_their_reward(qwen3_chat, chatml_chat):
    states = [state_of(*qwen3_chat), state_of(*chatml_chat)]
    out = process(states, ByteTokenizer(QWEN3_STYLE), rewards=[0.5, 1.0])
    assert out.rollout_index == [0, 0, 0, 1]
    assert out.rewards == [0.5, 0.5, 0.5, 1.0]
    for i in range(4):
        assert len(out.completion_ids[i]) == len(out.completion_mask[i]) == len(out.completion_logprobs[i])


def test_tuple_era_states_without_a_trajectory_give_the_same_rows(qwen3_chat, chatml_chat):
    for chat, template in [(chatml_chat, CHATML), (qwen3_chat, QWEN3_STYLE)]:
        with_trajectory = state_of(*chat)
        tuple_era = state_of(*chat)
        tuple_era["trajectory"] = []
        tok = ByteTokenizer(template)
        assert process([tuple_era], tok) == process([with_trajectory], tok)


def test_tuple_era_tool_rollout_rebuilds_prompt_ids_with_the_states_tools():
    tool_turn = [{"role": "tool", "tool_call_id": "call_0", "content": "5"}]
    messages, with_ids = rollout(CHATML, thinking_tool_user, [tool_turn], tools=[ADD_TOOL])
    _, without = rollout(CHATML, thinking_tool_user, [tool_turn], tools=[ADD_TOOL], sampling=IDS_IN_LOGPROBS_ONLY)
    expected = process([state_of(messages, with_ids)], ByteTokenizer())
    tuple_era = state_of(messages, without, oai_tools=[ADD_TOOL])
    tuple_era["trajectory"] = []
    assert process([tuple_era], ByteTokenizer()) == expected
    assert len(expected.prompt_ids) == 1


def test_max_seq_len_cuts_and_flags_truncated_rows(chatml_chat):
    messages, trajectory = chatml_chat
    tok = ByteTokenizer()
    full = process([state_of(messages, trajectory)], tok)
    prompt_len = len(full.prompt_ids[0])
    limit = prompt_len + 10
    out = process([state_of(messages, trajectory)] * 2, tok, rewards=[1.0, 1.0], max_seq_len=limit)
    assert out.prompt_ids[0] == full.prompt_ids[0]
    assert out.completion_ids[0] == full.completion_ids[0][:10]
    assert len(out.completion_logprobs[0]) == len(out.completion_mask[0]) == 10
    assert out.rewards == [1.0, 1.0]
    tiny = process([state_of(messages, trajectory)], tok, max_seq_len=5)
    assert tiny.prompt_ids[0] == full.prompt_ids[0][:5] and tiny.completion_ids[0] == []
    masked = process([state_of(messages, trajectory)], tok, max_seq_len=limit, mask_truncated_completions=True,
                     zero_truncated_completions=True, rewards=[1.0])
    assert masked.completion_mask[0] == [0] * 10 and masked.rewards == [0.0]
    untouched = process([state_of(messages, trajectory)], tok, max_seq_len=10_000, zero_truncated_completions=True,
                        rewards=[1.0])
    assert untouched == full.model_copy(update={"rewards": [1.0]})


def test_states_marked_truncated_count_as_truncated(chatml_chat):
    out = process([state_of(*chatml_chat, is_truncated=True)], ByteTokenizer(), rewards=[1.0],
                  zero_truncated_completions=True, mask_truncated_completions=True)
    assert out.rewards == [0.0] and set(out.completion_mask[0]) == {0}


def test_completion_mode_rollouts_merge():
    prompt = "Reverse: abc\n"
    trajectory, completion = [], ""
    with ScriptedServer("echo").running() as base_url, openai.OpenAI(base_url=base_url, api_key="x") as client:
        starts = []
        for env_text in ["\nAgain: ", None]:
            response = client.completions.create(model="m", prompt=prompt + completion, logprobs=1,
                                                 extra_body={"return_tokens_as_token_ids": True})
            starts.append(len(completion))
            trajectory.append({"prompt": prompt + completion, "response": response})
            completion += response.choices[0].text + (env_text or "")
    state = State.new(prompt=prompt)
    state.update(completion=completion, responses=[s["response"] for s in trajectory], responses_start_idx=starts)
    out = process_env_results_vllm([prompt], [completion], [state], [1.0], ByteTokenizer(), mask_env_responses=True)
    tok = ByteTokenizer()
    assert out.rollout_index == [0]
    assert out.prompt_ids[0] == tok.encode(prompt)
    assert tok.decode(out.prompt_ids[0] + out.completion_ids[0]) == prompt + completion
    assert out.completion_mask[0].count(0) == len(tok.encode("\nAgain: "))
    trained = [i for i, m in zip(out.completion_ids[0], out.completion_mask[0]) if m]
    assert trained == [t for s in trajectory for t in step_tokens(s["response"])["completion_ids"]]


def test_bad_inputs_raise(chatml_chat):
    messages, trajectory = chatml_chat
    state = state_of(messages, trajectory)
    with pytest.raises(UsageError, match="same length"):
        process_env_results_vllm([PROMPT], [state["completion"]], [state, state], [1.0], ByteTokenizer())
    state["trajectory"] = []
    state["responses"] = state["responses"][:1]
    with pytest.raises(UsageError, match="3 assistant turns"):
        process([state], ByteTokenizer())
    text_state = State.new(prompt="p")
    text_state.update(completion="ab", responses=[None, None])
    with pytest.raises(UsageError, match="responses_start_idx"):
        process_env_results_vllm(["p"], ["ab"], [text_state], [0.0], ByteTokenizer())
