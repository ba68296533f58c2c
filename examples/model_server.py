"""What the evaluation examples share: a model server to talk to, and a printout of the scores.

Every example runs offline by default: it starts the project's scripted OpenAI-compatible server
(``verifiers.testing.ScriptedServer``) on a free port, with a small policy of its own standing in for a
model. ``--base-url`` (and ``--model``) point it at a real server instead: vLLM, a provider, or
``vf-scripted-server``. This module is imported by the examples; it does nothing when run.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from openai import AsyncOpenAI

import verifiers as vf
from verifiers.testing import Policy, Reply, ScriptedServer


def arguments(description: str) -> argparse.ArgumentParser:
    """A parser with the options every example takes; an example may add its own before parsing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", help="/v1 URL of an OpenAI-compatible server (default: start the scripted "
                                           "model server on a free port).")
    parser.add_argument("--model", default="scripted", help="Model name sent to the server.")
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY",
                        help="Environment variable holding the server's API key (used with --base-url).")
    return parser


@contextmanager
def model_client(args: argparse.Namespace, policy: Policy) -> Iterator[AsyncOpenAI]:
    """A client for ``--base-url``, or for a scripted server answering with ``policy`` for the block's duration."""
    if args.base_url:
        # Local servers (vLLM, vf-scripted-server) take any key; the OpenAI client insists on one.
        yield AsyncOpenAI(base_url=args.base_url, api_key=os.environ.get(args.api_key_var, "none"))
        return
    with ScriptedServer(policy, port=0).running() as base_url:
        print(f"scripted model server: {base_url}")
        # The SDK retries failed model calls itself (set_max_retries); the client's own retries would double them.
        yield AsyncOpenAI(base_url=base_url, api_key="scripted", max_retries=0)


def tool_call(name: str, arguments: dict[str, Any], request_turn: int) -> Reply:
    """A scripted reply that calls one tool, as a model's ``tool_calls`` message does."""
    call = {"id": f"call_{request_turn}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(tool_calls=[call])


def last_reply(messages: list[dict[str, Any]]) -> str:
    """The text of the last assistant message (what the model finally said)."""
    replies = [m for m in messages if m.get("role") == "assistant" and m.get("content")]
    return str(replies[-1]["content"]).strip() if replies else ""


def run(make_env: Callable[[], vf.Environment], policy: Policy, describe: Callable[[dict[str, Any]], str],
        doc: str | None, by_task: bool = False) -> None:
    """An example's whole ``main``: parse the common options, evaluate every eval row once, print the scores."""
    args = arguments((doc or "").splitlines()[0]).parse_args()
    env = make_env()
    with model_client(args, policy) as client:
        results = env.evaluate_sync(client, args.model, num_examples=-1, rollouts_per_example=1)
    report(results, describe, by_task)


def report(results: vf.GenerateOutputs, describe: Callable[[dict[str, Any]], str], by_task: bool = False) -> None:
    """One line per rollout (``describe(output)`` and its reward), then the mean reward (and each task's)."""
    outputs = results["outputs"]
    for output in outputs:
        error = f"  error: {output['error']}" if output["error"] else ""
        print(f"{describe(output)}  reward {output['reward']:.3f}{error}")
    if by_task:
        for task in sorted({o["task"] for o in outputs}):
            rewards = [o["reward"] for o in outputs if o["task"] == task]
            print(f"task {task}: mean reward {sum(rewards) / len(rewards):.3f} ({len(rewards)} rollouts)")
    mean = sum(o["reward"] for o in outputs) / len(outputs)
    print(f"mean reward: {mean:.3f} ({len(outputs)} rollouts)")
