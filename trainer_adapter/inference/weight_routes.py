"""The weight routes of the inference server, as an ASGI middleware handed to vLLM (``--middleware``).

vLLM's OpenAI-compatible server stays as it is; this middleware, in front of it, adds::

    POST /update_weights  {"weight_dir": "/path/to/hf_folder"}  -> load that safetensors folder in place
    POST /reload_weights  {}                                     -> back to the weights the server started with
    GET  /weights                                                -> {"version", "weight_dir", "base"}
    POST /commitment  {"rollouts": [...], "interval", "k"}      -> hidden-state commitments (commitment_route.py)

Requests in flight are not drained (see :mod:`trainer_adapter.inference.weight_worker`). Two more things make an
updated server answer like a fresh one:

- *Prefix cache.* KV blocks computed with old weights would be reused by new requests with the same
  prompt prefix. After the n-th update every generation request gets ``cache_salt`` "weights-vN" (joined
  to any salt of its own), so new requests never hit old blocks while requests in flight keep theirs.
- *Auth.* vLLM only guards ``/v1`` paths with ``--api-key``; these routes change the model, so they ask for a
  bearer token that is the run secret (``VF_RUN_SECRET``, :mod:`trainer_adapter.inference.run_secret`) or one of
  vLLM's API keys, and are closed (403) on a server that has neither.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trainer_adapter.inference.commitment_route import add_commitment_route
from trainer_adapter.inference.errors import WeightsFolderError
from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
from trainer_adapter.inference.weights_folder import check_compatible, is_tied, read_index, weight_files

logger = logging.getLogger(__name__)

ADMIN_PATHS = frozenset({"/update_weights", "/reload_weights", "/weights", "/commitment"})
SALTED_PATHS = frozenset({"/v1/chat/completions", "/v1/completions", "/inference/v1/generate"})
_ENGINE_KEY = "trainer_adapter.engine_client"


class UpdateWeightsRequest(BaseModel):
    """Body of ``POST /update_weights``."""

    model_config = ConfigDict(extra="forbid")

    weight_dir: str = Field(
        min_length=1, description="A Hugging Face safetensors folder with the served model's tensors."
    )


@dataclass
class WeightState:
    """Which weights the engine serves; ``version`` counts successful loads since start."""

    version: int = 0
    weight_dir: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def salt(self) -> str | None:
        return f"weights-v{self.version}" if self.version else None


class WeightRoutes:
    """ASGI middleware: serves the weight routes and salts generation requests; everything else passes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state = WeightState()
        self.admin = build_admin_app(self.state)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path in ADMIN_PATHS:
            # The admin app is its own Starlette app: it replaces scope["app"], so hand it vLLM's engine here.
            engine = scope["app"].state.engine_client
            admin_scope = {**scope, _ENGINE_KEY: engine, "vllm_args": scope["app"].state.args}
            # The token first, before the body is read or validated: a caller without it learns nothing.
            if denied := _check_token(Request(admin_scope)):
                await denied(admin_scope, receive, send)
                return
            await self.admin(admin_scope, receive, send)
            return
        salt = self.state.salt()
        if salt is not None and scope.get("method") == "POST" and path in SALTED_PATHS:
            scope, receive = await _with_salt(scope, receive, salt)
        await self.app(scope, receive, send)


def build_admin_app(state: WeightState) -> FastAPI:
    """The three weight routes over ``state``; the engine client arrives in the request scope."""
    admin = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @admin.exception_handler(WeightsFolderError)
    async def _bad_folder(request: Request, exc: WeightsFolderError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @admin.post("/update_weights")
    async def update_weights(request: Request, body: UpdateWeightsRequest) -> JSONResponse:
        if denied := _check_token(request):
            return denied
        engine = request.scope[_ENGINE_KEY]
        base = str(engine.vllm_config.model_config.model)
        weight_dir = str(Path(body.weight_dir).resolve())
        _check_folder(weight_dir, base)
        return await _load(request, state, "load_weights_from_dir", weight_dir, args=(weight_dir,))

    @admin.post("/reload_weights")
    async def reload_weights(request: Request) -> JSONResponse:
        if denied := _check_token(request):
            return denied
        base = str(request.scope[_ENGINE_KEY].vllm_config.model_config.model)
        return await _load(request, state, "load_base_weights", None, args=(base,))

    @admin.get("/weights")
    async def weights(request: Request) -> JSONResponse:
        if denied := _check_token(request):
            return denied
        base = str(request.scope[_ENGINE_KEY].vllm_config.model_config.model)
        return JSONResponse({"version": state.version, "weight_dir": state.weight_dir, "base": base})

    add_commitment_route(admin, _ENGINE_KEY, state, _check_token)  # the validator's commitments (issue 14)
    return admin


def _check_folder(weight_dir: str, base: str) -> None:
    """Names and shapes must match the served model's; checked from headers before the engine is touched."""
    new = read_index(weight_dir)
    if Path(base).is_dir():
        check_compatible(new, read_index(base), tied=is_tied(base))
    elif not new:
        raise WeightsFolderError(f"weights folder {weight_dir} holds no tensors")
    else:
        # A hub id: its files are in vLLM's cache, not here; the engine's loader checks names and shapes.
        weight_files(weight_dir)


async def _load(
    request: Request, state: WeightState, method: str, weight_dir: str | None, args: tuple[str, ...]
) -> JSONResponse:
    engine = request.scope[_ENGINE_KEY]
    async with state.lock:  # one load at a time; generation goes on meanwhile
        start = time.perf_counter()
        try:
            results = await engine.collective_rpc(method, args=args)
        except Exception as exc:  # vLLM re-raises a worker's error as a bare Exception carrying its message
            logger.exception("%s failed", method)
            return JSONResponse({"error": f"{method} failed: {exc}"}, status_code=500)
        state.version += 1
        state.weight_dir = weight_dir
        seconds = time.perf_counter() - start
    repacked = results[0].get("repacked", []) if results and isinstance(results[0], dict) else []
    logger.info("weights v%d from %s in %.3f s", state.version, weight_dir or "the base model", seconds)
    return JSONResponse(
        {"version": state.version, "weight_dir": weight_dir, "seconds": round(seconds, 4), "repacked": repacked}
    )


def _check_token(request: Request) -> JSONResponse | None:
    """Deny unless the bearer token is the run secret or one of vLLM's API keys; with neither set, deny all."""
    args = request.scope.get("vllm_args")
    keys = [k for k in (*(getattr(args, "api_key", None) or [os.environ.get("VLLM_API_KEY")]), run_secret()) if k]
    if not keys:
        return JSONResponse({"error": f"the weight routes are closed: this server has no run secret ({RUN_SECRET_VAR})"
                                      " or API key; start it with one, and give the trainer the same"},
                            status_code=403)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    digest = hashlib.sha256(token.encode()).digest()
    ok = scheme.lower() == "bearer" and any(
        secrets.compare_digest(digest, hashlib.sha256(k.encode()).digest()) for k in keys
    )
    return None if ok else JSONResponse({"error": "Unauthorized"}, status_code=401)


async def _with_salt(scope: Scope, receive: Receive, salt: str) -> tuple[Scope, Receive]:
    """Read the whole body, add ``cache_salt``, and hand on a scope and receive that replay the new body."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away; let vLLM see it
            return scope, _replay([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = salted_body(b"".join(chunks), salt)
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    new_scope = {**scope, "headers": headers}
    return new_scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive)


def salted_body(body: bytes, salt: str) -> bytes:
    """The JSON request body with ``salt`` joined to its ``cache_salt``; anything else unchanged (vLLM rejects it)."""
    try:
        data: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return body
    if not isinstance(data, dict):
        return body
    own = data.get("cache_salt")
    data["cache_salt"] = f"{own}/{salt}" if isinstance(own, str) and own else salt
    return json.dumps(data).encode()


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


__all__ = ["UpdateWeightsRequest", "WeightRoutes", "WeightState", "build_admin_app", "salted_body"]
