"""Shared fixtures: a real scripted OpenAI-compatible server on 127.0.0.1 and clients for it; and the start of the
type checker's run when the session includes it (``tests/mypy_run.py``)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from openai import AsyncOpenAI

from tests import mypy_run
from verifiers.testing import ScriptedServer


def pytest_configure(config: pytest.Config) -> None:
    # One run secret for the session, as a launcher makes one per run: the inference servers tests start and the
    # weight clients they use share it (trainer_adapter/inference/run_secret.py); tests of its absence unset it.
    os.environ.setdefault("VF_RUN_SECRET", "test-session-" + secrets.token_urlsafe(16))


def pytest_collection_finish(session: pytest.Session) -> None:
    # The type checker's cold run starts now, at the lowest CPU priority, when the session will check the tree.
    mypy_run.start_early([item.nodeid for item in session.items])


def pytest_sessionfinish(session: pytest.Session) -> None:
    mypy_run.stop_early()


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """``serve(policy, **server_kwargs) -> base_url``; every server stops at the end of the test."""
    with ExitStack() as stack:

        def start(policy: Any = "echo", **kwargs: Any) -> str:
            return stack.enter_context(ScriptedServer(policy, port=0, **kwargs).running())

        yield start


@pytest.fixture
def client_for() -> Callable[..., AsyncOpenAI]:
    """An AsyncOpenAI client for a base URL, with the client's own retries off (the SDK retries)."""

    def make(base_url: str, **kwargs: Any) -> AsyncOpenAI:
        kwargs.setdefault("max_retries", 0)
        return AsyncOpenAI(base_url=base_url, api_key="test", **kwargs)

    return make
