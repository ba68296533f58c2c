"""JudgeRubric against a real OpenAI-compatible HTTP server on 127.0.0.1 and the real OpenAI clients."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from openai import AsyncOpenAI, OpenAI

from verifiers.errors import ModelError
from verifiers.parsers.xml_parser import XMLParser
from verifiers.rubrics.judge_rubric import DEFAULT_JUDGE_PROMPT, JudgeError, JudgeRubric, judge_request_args

PROMPT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]
COMPLETION = [{"role": "assistant", "content": "It is 4."}]


class JudgeServer(ThreadingHTTPServer):
    """Answers /v1/chat/completions with ``reply`` (or ``status`` if not 200) and records each request body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.reply = "yes"
        self.status = 200

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: JudgeServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        if self.server.status != 200:
            payload = {"error": {"message": "judge overloaded", "type": "server_error"}}
        else:
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.server.reply},
                }],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        data = json.dumps(payload).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = JudgeServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def async_client(server: JudgeServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


async def judged_correct(judge, prompt, completion, answer, state) -> float:
    verdict = await judge(prompt, completion, answer, state)
    return 1.0 if "yes" in verdict.lower() else 0.0


async def test_judge_sends_the_filled_prompt_and_returns_the_reply(server):
    client = async_client(server)
    rubric = JudgeRubric(judge_client=client, judge_model="judge-m", judge_sampling_args={"temperature": 0.0})
    verdict = await rubric.judge(PROMPT, COMPLETION, "4", {})
    assert verdict == "yes"
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "judge-m" and request["temperature"] == 0.0
    [message] = request["messages"]
    assert message["role"] == "user"
    assert message["content"] == DEFAULT_JUDGE_PROMPT.format(question="What is 2+2?", answer="4", response="It is 4.")


async def test_verdicts_are_cached_per_state(server):
    rubric = JudgeRubric(judge_client=async_client(server), judge_prompt="Q={question} A={answer} R={response}")
    state = {}
    first = await rubric.judge(PROMPT, COMPLETION, "4", state)
    server.reply = "no"
    again = await rubric.judge(PROMPT, COMPLETION, "4", state)
    assert first == again == "yes"
    assert len(server.requests) == 1
    assert state["judge_response"] == {"Q=What is 2+2? A=4 R=It is 4.": "yes"}
    assert await rubric.judge(PROMPT, COMPLETION, "4", {}) == "no"  # a new rollout asks again


async def test_reward_function_uses_the_injected_judge(server):
    rubric = JudgeRubric(judge_client=async_client(server))
    rubric.add_reward_func(judged_correct)
    assert set(rubric.class_objects) >= {"judge", "judge_client", "judge_model", "judge_prompt", "judge_sampling_args"}
    assert rubric.parallelize_scoring is False
    score = await rubric.score_rollout(PROMPT, COMPLETION, "4", {})
    assert score.reward == 1.0 and score.metrics == {"judged_correct": 1.0}
    server.reply = "No."
    assert (await rubric.score_rollout(PROMPT, COMPLETION, "5", {})).reward == 0.0


async def test_a_sync_openai_client_also_works(server):
    rubric = JudgeRubric(judge_client=OpenAI(base_url=server.base_url, api_key="k", max_retries=0))
    assert await rubric.judge("What is 2+2?", "4", "4") == "yes"
    assert server.requests[0]["messages"][0]["content"].count("What is 2+2?") == 1


async def test_api_errors_become_judge_errors_with_guidance(server):
    server.status = 500
    rubric = JudgeRubric(judge_client=async_client(server), judge_model="judge-m")
    with pytest.raises(JudgeError, match="judge-m.*judge_client=AsyncOpenAI") as caught:
        await rubric.judge(PROMPT, COMPLETION, "4", {})
    assert isinstance(caught.value, ModelError) and isinstance(caught.value, RuntimeError)
    rubric.add_reward_func(judged_correct)
    state = {}
    assert (await rubric.score_rollout(PROMPT, COMPLETION, "4", state)).reward == 0.0
    assert state["scoring_errors"]["judged_correct"].startswith("JudgeError:")


async def test_unreachable_server_is_a_judge_error():
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=2.0)
    with pytest.raises(JudgeError, match="Check that the server is up"):
        await JudgeRubric(judge_client=client).judge(PROMPT, COMPLETION, "4", {})


async def test_without_an_api_key_construction_works_and_judging_explains(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rubric = JudgeRubric()
    assert rubric.judge_client is None and rubric.judge_model == "gpt-4.1-nano"
    with pytest.raises(JudgeError, match="set OPENAI_API_KEY"):
        await rubric.judge(PROMPT, COMPLETION, "4", {})


def test_default_client_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert isinstance(JudgeRubric().judge_client, AsyncOpenAI)


def test_default_prompt_has_the_three_placeholders():
    filled = DEFAULT_JUDGE_PROMPT.format(question="Q?", answer="A!", response="R.")
    assert "Q?" in filled and "A!" in filled and "R." in filled and "yes" in filled


async def test_no_parsed_answer_is_filled_in_as_none(server):
    # Both classic releases format a missing answer as the text "None"; judge prompts depend on it.
    rubric = JudgeRubric(judge_client=async_client(server), parser=XMLParser(["answer"]), judge_prompt="R={response}")
    await rubric.judge(PROMPT, COMPLETION, "4", {})
    assert server.requests[0]["messages"][0]["content"] == "R=None"


async def test_a_reply_without_text_reads_none(server):
    server.reply = None
    assert await JudgeRubric(judge_client=async_client(server)).judge(PROMPT, COMPLETION, "4", {}) == "None"


async def test_max_tokens_is_sent_as_max_completion_tokens(server):
    args = {"max_tokens": 32, "max_completion_tokens": 99, "temperature": 0.5, "top_p": None}
    rubric = JudgeRubric(judge_client=async_client(server), judge_sampling_args=args)
    await rubric.judge(PROMPT, COMPLETION, "4", {})
    request = server.requests[0]
    assert request["max_completion_tokens"] == 32 and request["temperature"] == 0.5
    assert "max_tokens" not in request and "top_p" not in request
    assert rubric.judge_sampling_args == args  # the rubric's own settings are left as given


@pytest.mark.parametrize("given, sent", [
    ({}, {}),
    ({"max_tokens": 8}, {"max_completion_tokens": 8}),
    ({"max_tokens": None}, {}),
    ({"max_tokens": None, "max_completion_tokens": 5}, {"max_completion_tokens": 5}),
    ({"max_tokens": 8, "max_completion_tokens": None}, {"max_completion_tokens": 8}),
    ({"max_tokens": 8, "max_completion_tokens": 5}, {"max_completion_tokens": 8}),  # max_tokens wins, as in 0.3.0
    ({"max_completion_tokens": None, "seed": 1}, {"seed": 1}),
])
def test_judge_request_args(given, sent):
    assert judge_request_args(given) == sent
