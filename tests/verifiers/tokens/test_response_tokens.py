"""step_tokens: token ids and logprobs from real scripted-server responses (SDK objects and dicts)."""

from __future__ import annotations

import openai
import pytest

from verifiers.errors import ModelError
from verifiers.testing import ByteTokenizer, ScriptedServer
from verifiers.tokens import step_tokens

USER = [{"role": "user", "content": "hello"}]
TOK = ByteTokenizer()
REPLY_IDS = TOK.encode("olleh") + [TOK.eos_token_id]


@pytest.fixture(scope="module")
def client():
    with ScriptedServer(policy="reverse").running() as base_url:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as c:
            yield c


def test_chat_with_token_ids_and_logprobs(client):
    response = client.chat.completions.create(model="m", messages=USER, logprobs=True,
                                              extra_body={"return_token_ids": True})
    tokens = step_tokens(response)
    assert tokens is not None
    assert tokens["prompt_ids"] == TOK.apply_chat_template(USER, add_generation_prompt=True)
    assert tokens["prompt_mask"] == [0] * len(tokens["prompt_ids"])
    assert tokens["completion_ids"] == REPLY_IDS
    assert tokens["completion_mask"] == [1] * len(REPLY_IDS)
    assert tokens["completion_logprobs"] == [e.logprob for e in response.choices[0].logprobs.content]


def test_ids_from_token_id_strings_when_the_server_sends_no_token_ids(client):
    response = client.chat.completions.create(model="m", messages=USER, logprobs=True,
                                              extra_body={"return_tokens_as_token_ids": True})
    tokens = step_tokens(response)
    assert tokens is not None
    assert tokens["completion_ids"] == REPLY_IDS
    assert tokens["prompt_ids"] == [] and tokens["prompt_mask"] == []


def test_token_ids_without_logprobs_get_zero_logprobs(client):
    response = client.chat.completions.create(model="m", messages=USER, extra_body={"return_token_ids": True})
    tokens = step_tokens(response)
    assert tokens is not None and tokens["completion_logprobs"] == [0.0] * len(REPLY_IDS)


def test_no_token_information_gives_none(client):
    assert step_tokens(client.chat.completions.create(model="m", messages=USER)) is None
    # logprobs with plain token strings: the ids cannot be known
    assert step_tokens(client.chat.completions.create(model="m", messages=USER, logprobs=True)) is None
    assert step_tokens(None) is None
    assert step_tokens({"choices": []}) is None


def test_completion_responses(client):
    response = client.completions.create(model="m", prompt="abc", logprobs=1,
                                         extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True})
    tokens = step_tokens(response)
    assert tokens is not None
    assert tokens["prompt_ids"] == [97, 98, 99] and tokens["completion_ids"] == [99, 98, 97]
    assert tokens["completion_logprobs"] == response.choices[0].logprobs.token_logprobs


def test_plain_json_dicts_work_too(client):
    response = client.chat.completions.create(model="m", messages=USER, logprobs=True,
                                              extra_body={"return_token_ids": True})
    assert step_tokens(response.model_dump()) == step_tokens(response)


def test_choice_level_prompt_ids_are_read():
    tokens = step_tokens({"choices": [{"token_ids": [4], "prompt_token_ids": [1, 2]}]})
    assert tokens is not None and tokens["prompt_ids"] == [1, 2]


def test_ids_and_logprobs_of_different_lengths_are_a_model_error():
    broken = {"choices": [{"token_ids": [1, 2], "logprobs": {"content": [{"token": "a", "logprob": -1.0}]}}]}
    with pytest.raises(ModelError, match="2 completion token ids but 1 logprobs"):
        step_tokens(broken)
