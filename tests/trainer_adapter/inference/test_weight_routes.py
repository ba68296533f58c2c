"""The weight routes and prefix-cache salting, in front of a stand-in for vLLM's app and engine client.

The stand-in implements the two things the middleware uses from vLLM (``app.state.engine_client`` with
``collective_rpc`` and ``vllm_config.model_config.model``, and ``app.state.args.api_key``); the real engine
is exercised in test_vllm_cpu.py. Requests go through :class:`WeightsClient` or plain httpx, in process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import httpx2
import numpy as np
import pytest
from fastapi import FastAPI, Request
from safetensors.numpy import save_file

from trainer_adapter.inference.errors import InferenceServerError, WeightsFolderError, WeightUpdateError
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR
from trainer_adapter.inference.weight_routes import WeightRoutes, salted_body
from trainer_adapter.inference.weights_client import WeightsClient

SHAPES = {"model.embed_tokens.weight": (8, 4), "model.norm.weight": (4,)}


class StandInEngine:
    """Records collective_rpc calls; raises when told to."""

    def __init__(self, model: str) -> None:
        self.vllm_config = SimpleNamespace(model_config=SimpleNamespace(model=model))
        self.calls: list[tuple[str, tuple]] = []
        self.fail: str | None = None

    async def collective_rpc(self, method: str, timeout: float | None = None, args: tuple = (), kwargs: Any = None):
        self.calls.append((method, args))
        if self.fail:
            raise RuntimeError(self.fail)
        return [{"weight_dir": args[0] if method == "load_weights_from_dir" else None, "repacked": ["lm_head"]}]


def write_model(path: Path, shapes: dict[str, tuple[int, ...]] = SHAPES) -> Path:
    path.mkdir(parents=True)
    save_file({k: np.zeros(s, dtype=np.float32) for k, s in shapes.items()}, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"tie_word_embeddings": True}))
    return path


def vllm_like_app(engine: StandInEngine, api_key: list[str] | None = None) -> FastAPI:
    app = FastAPI()
    app.state.engine_client = engine
    app.state.args = SimpleNamespace(api_key=api_key)

    @app.post("/v1/completions")
    async def echo(request: Request) -> dict:
        return {"body": json.loads(await request.body()), "length": request.headers["content-length"]}

    app.add_middleware(WeightRoutes)
    return app


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return write_model(tmp_path / "base")


@pytest.fixture
def engine(base: Path) -> StandInEngine:
    return StandInEngine(str(base))


def client_for(app: FastAPI, api_key: str | None = None) -> WeightsClient:
    return WeightsClient("http://server/v1", api_key=api_key, transport=httpx2.ASGITransport(app=app))


async def test_update_loads_a_matching_folder_and_counts_versions(tmp_path: Path, engine: StandInEngine) -> None:
    new = write_model(tmp_path / "new")
    async with client_for(vllm_like_app(engine)) as weights:
        assert (await weights.current())["version"] == 0
        info = await weights.update(str(new))
        assert info["version"] == 1 and info["weight_dir"] == str(new.resolve()) and info["repacked"] == ["lm_head"]
        back = await weights.reload()
        assert back["version"] == 2 and back["weight_dir"] is None
        base = engine.vllm_config.model_config.model
        assert await weights.current() == {"version": 2, "weight_dir": None, "base": base}
    assert engine.calls == [
        ("load_weights_from_dir", (str(new.resolve()),)),
        ("load_base_weights", (engine.vllm_config.model_config.model,)),
    ]


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ({"model.embed_tokens.weight": (9, 4), "model.norm.weight": (4,)}, r"other shapes: model.embed_tokens.weight"),
        ({"model.embed_tokens.weight": (8, 4)}, "missing tensors: model.norm.weight"),
        ({**SHAPES, "model.extra": (1,)}, "unknown tensors: model.extra"),
    ],
)
async def test_folders_that_do_not_fit_are_refused_before_the_engine(
    tmp_path: Path, engine: StandInEngine, shapes: dict, message: str
) -> None:
    new = write_model(tmp_path / "new", shapes)
    async with client_for(vllm_like_app(engine)) as weights:
        with pytest.raises(WeightsFolderError, match=message):
            await weights.update(str(new))
        assert (await weights.current())["version"] == 0
    assert engine.calls == []


def _authorized() -> dict[str, str]:
    return {"Authorization": f"Bearer {os.environ[RUN_SECRET_VAR]}"}  # the session's (tests/conftest.py)


async def test_bad_bodies_are_refused(engine: StandInEngine, tmp_path: Path) -> None:
    app = vllm_like_app(engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server",
                                 headers=_authorized()) as http:
        assert (await http.post("/update_weights", json={})).status_code == 422
        assert (await http.post("/update_weights", json={"weight_dir": ""})).status_code == 422
        assert (await http.post("/update_weights", json={"weight_dir": "x", "extra": 1})).status_code == 422
        missing = await http.post("/update_weights", json={"weight_dir": str(tmp_path / "nowhere")})
        assert missing.status_code == 400 and "does not exist" in missing.json()["error"]
        assert (await http.get("/update_weights")).status_code == 405
    assert engine.calls == []


async def test_engine_failure_is_a_500_and_keeps_the_version(tmp_path: Path, engine: StandInEngine) -> None:
    new = write_model(tmp_path / "new")
    engine.fail = "loading blew up"
    async with client_for(vllm_like_app(engine)) as weights:
        with pytest.raises(WeightUpdateError, match="loading blew up"):
            await weights.update(str(new))
        assert (await weights.current())["version"] == 0


async def test_routes_need_the_api_key_when_one_is_set(tmp_path: Path, engine: StandInEngine) -> None:
    app = vllm_like_app(engine, api_key=["sesame"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server") as http:
        assert (await http.get("/weights")).status_code == 401
        assert (await http.post("/reload_weights", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await http.get("/weights", headers={"Authorization": "Bearer sesame"})).status_code == 200
    async with client_for(app, api_key="sesame") as weights:
        assert (await weights.reload())["version"] == 1


async def test_without_a_run_secret_or_api_key_the_routes_are_closed(engine: StandInEngine,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUN_SECRET_VAR, raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    app = vllm_like_app(engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server") as http:
        for method, path in (("GET", "/weights"), ("POST", "/reload_weights"), ("POST", "/update_weights"),
                             ("POST", "/commitment")):
            answer = await http.request(method, path, json={}, headers={"Authorization": "Bearer anything"})
            assert answer.status_code == 403 and RUN_SECRET_VAR in answer.text, (path, answer.text)
    assert engine.calls == []


async def test_the_run_secret_opens_the_routes_and_nothing_else_does(engine: StandInEngine,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUN_SECRET_VAR, "the-run-secret")
    app = vllm_like_app(engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server") as http:
        assert (await http.get("/weights")).status_code == 401
        assert (await http.post("/reload_weights", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await http.get("/weights", headers={"Authorization": "Basic the-run-secret"})).status_code == 401
    async with client_for(app) as weights:  # the client sends the run secret of its environment
        assert (await weights.reload())["version"] == 1
    async with client_for(app, api_key="wrong") as weights:
        with pytest.raises(InferenceServerError, match="401"):
            await weights.reload()


async def test_generation_requests_are_salted_only_after_an_update(tmp_path: Path, engine: StandInEngine) -> None:
    app = vllm_like_app(engine)
    new = write_model(tmp_path / "new")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server",
                                 headers=_authorized()) as http:
        before = (await http.post("/v1/completions", json={"prompt": "hi"})).json()
        assert "cache_salt" not in before["body"]
        assert (await http.post("/update_weights", json={"weight_dir": str(new)})).status_code == 200
        after = (await http.post("/v1/completions", json={"prompt": "hi"})).json()
        assert after["body"] == {"prompt": "hi", "cache_salt": "weights-v1"}
        assert int(after["length"]) == len(json.dumps(after["body"]).encode())
        own = (await http.post("/v1/completions", json={"prompt": "hi", "cache_salt": "mine"})).json()
        assert own["body"]["cache_salt"] == "mine/weights-v1"


def test_salting_leaves_what_is_not_a_json_object_alone() -> None:
    assert salted_body(b"not json", "s") == b"not json"
    assert salted_body(b"[1, 2]", "s") == b"[1, 2]"
    assert salted_body(b"\xff", "s") == b"\xff"
    assert json.loads(salted_body(b'{"cache_salt": ""}', "s")) == {"cache_salt": "s"}


async def test_unreachable_server_is_an_inference_server_error() -> None:
    from trainer_adapter.inference.errors import InferenceServerError

    async with WeightsClient("http://127.0.0.1:9/v1", timeout=2.0) as weights:
        with pytest.raises(InferenceServerError):
            await weights.current()
