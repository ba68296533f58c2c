"""vf-eval's model client: the fast transport, the run's limits, headers and key."""

from __future__ import annotations

import pytest

from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig
from verifiers.eval.run import make_client
from verifiers.http import KeepAliveTransport
from verifiers.testing import ScriptedServer


async def test_make_client_uses_the_keep_alive_transport_with_the_runs_settings() -> None:
    server = ScriptedServer("reverse")
    async with server.serving() as base_url:
        config = EvalConfig(env_id="reverse-text", api_base_url=base_url, max_concurrent=8,
                            headers=["X-Team: t1"], timeout=30)
        client = make_client(config)
        transport = client._client._transport
        assert isinstance(transport, KeepAliveTransport) and transport._max_connections == 16
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
