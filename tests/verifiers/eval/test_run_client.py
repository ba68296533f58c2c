"""vf-eval's model client: openai's aiohttp client with the run's connection cap, headers and key."""

from __future__ import annotations

import asyncio

import pytest

from tests.verifiers.http.conftest import raw_server
from tests.verifiers.http.test_openai_client import MESSAGES, chat_ok
from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig
from verifiers.eval.run import make_client
from verifiers.testing import ScriptedServer


async def test_make_client_caps_connections_at_two_per_concurrent_rollout() -> None:
    async with raw_server(chat_ok) as server:
        client = make_client(EvalConfig(env_id="reverse-text", api_base_url=server.url + "/v1", max_concurrent=8))
        await asyncio.gather(*(client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(40)))
        await client.close()
    assert server.open_peak == 16


async def test_make_client_has_the_runs_settings() -> None:
    server = ScriptedServer("reverse")
    async with server.serving() as base_url:
        config = EvalConfig(env_id="reverse-text", api_base_url=base_url, max_concurrent=8,
                            headers=["X-Team: t1"], timeout=30)
        client = make_client(config)
        assert client.max_retries == 0  # the rollout retries, with backoff
        reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "abc"}])
        await client.close()
    assert reply.choices[0].message.content == "cba"
    assert server.recent_requests[0].headers["x-team"] == "t1"


def test_make_client_refuses_a_bad_header() -> None:
    with pytest.raises(UsageError, match="bad --header"):
        make_client(EvalConfig(env_id="reverse-text", api_base_url="http://127.0.0.1:8000/v1", headers=["nocolon"]))


async def test_coalesce_requests_sends_each_examples_rollouts_as_one_request(tmp_path) -> None:
    from verifiers.eval.run import run_eval

    server = ScriptedServer("reverse")
    async with server.serving() as base_url:
        config = EvalConfig(env_id="reverse-text", api_base_url=base_url, num_examples=3, rollouts_per_example=4,
                            max_concurrent=-1, coalesce_requests=True, output_dir=tmp_path)
        outputs, metadata, _ = await run_eval(config)
    assert len(outputs) == 12 and not any(o["error"] for o in outputs)
    assert len(server.recent_requests) == 3  # one per example, n = 4
    assert all(r.sampling.get("n") == 4 for r in server.recent_requests)
    assert metadata["config"]["coalesce_requests"] is True  # a resumed run merges as well
