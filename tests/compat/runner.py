"""Evaluate one compat environment module and write its scores as JSON.

Run by tests/compat/harness.py as a *subprocess* of the interpreter under test (an
original ``verifiers`` venv or this project's venv), so the two SDKs never share a
process. It uses only the public API of the requested era, exactly as a user would:

- ``tuple`` era (verifiers 0.1.x): ``env.evaluate(client, model, ...)`` returns an
  object with ``.reward`` (list) and ``.metrics`` (name -> list).
- ``state`` era (verifiers 0.1.8-0.3.0): ``env.evaluate_sync(client, model, ...)``
  returns ``{"outputs": [...], "metadata": ...}``; each output has ``reward`` and
  ``metrics``.

Usage: python runner.py ENV_MODULE ERA BASE_URL OUT_JSON [ENV_ARGS_JSON]
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

ENVS_DIR = Path(__file__).resolve().parent / "envs"
MODEL = "scripted-model"


def plain(value: Any) -> Any:
    """Turn SDK objects (pydantic models, message objects) into JSON-ready data."""
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def evaluate_tuple_era(env: Any, client: Any, num_examples: int, rollouts: int) -> dict:
    results = env.evaluate(client, MODEL, num_examples=num_examples, rollouts_per_example=rollouts)
    api_notes = []
    if inspect.isawaitable(results):
        # 0.1.x returns results synchronously. Score anyway (so other differences
        # still show), but report the deviation: unmodified 0.1.x scripts break on it.
        api_notes.append("evaluate() returned an awaitable; verifiers 0.1.x returns the results")
        results = asyncio.run(_awaited(results))
    return {
        "api_notes": api_notes,
        "rewards": [float(r) for r in results.reward],
        "metrics": {k: [float(x) for x in v] for k, v in results.metrics.items()},
        "completions": plain(results.completion),
    }


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def evaluate_state_era(env: Any, client: Any, num_examples: int, rollouts: int) -> dict:
    import verifiers as vf

    # 0.3.0 takes a vf.Client adapter (a bare AsyncOpenAI is refused); an SDK without
    # the adapter class gets the bare client, and the output says which was used.
    adapter = getattr(vf, "OpenAIChatCompletionsClient", None)
    if adapter is not None:
        client = adapter(client)
    results = env.evaluate_sync(client, MODEL, num_examples=num_examples, rollouts_per_example=rollouts)
    outputs = results["outputs"]
    names = sorted({name for out in outputs for name in out["metrics"]})
    return {
        "rewards": [float(out["reward"]) for out in outputs],
        # A metric missing from one rollout is reported as None, never silently 0.
        "metrics": {name: [out["metrics"].get(name) for out in outputs] for name in names},
        "completions": plain([out["completion"] for out in outputs]),
        "stop_conditions": [out.get("stop_condition") for out in outputs],
        "client": "OpenAIChatCompletionsClient" if adapter else "AsyncOpenAI",
    }


def main(argv: list[str]) -> None:
    module_name, era, base_url, out_path = argv[:4]
    env_args = json.loads(argv[4]) if len(argv) > 4 else {}
    num_examples = int(env_args.pop("_num_examples", -1))
    rollouts = int(env_args.pop("_rollouts_per_example", 1))
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("OPENAI_API_KEY", "compat-test")
    sys.path.insert(0, str(ENVS_DIR))

    import importlib

    from openai import AsyncOpenAI

    import verifiers

    module = importlib.import_module(module_name)
    env = module.load_environment(**env_args)
    client = AsyncOpenAI(base_url=base_url, api_key="compat-test")
    evaluate = evaluate_tuple_era if era == "tuple" else evaluate_state_era
    result = evaluate(env, client, num_examples, rollouts)
    result["verifiers_file"] = verifiers.__file__
    Path(out_path).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
