"""An evaluation run, as ``vf-eval`` performs it: config in, results folder out.

``run_eval(EvalConfig(...))`` loads the environment, streams every scored group
into ``results.jsonl``, and writes ``metadata.json`` (at the start with the
config, at the end with the scores). ``resume`` continues a killed run from its
folder: the saved config is reused, finished groups are kept, the rest runs.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from openai import AsyncOpenAI

from verifiers.clients import CoalescingClient
from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig
from verifiers.eval.engine import expand_rollouts, generate
from verifiers.eval.metadata import rollout_failures, summarize, version_info
from verifiers.eval.results import ResultsWriter, load_complete_groups
from verifiers.http import make_openai_client
from verifiers.loading import load_environment, parse_env_id


def _api_key(config: EvalConfig) -> str:
    key = os.environ.get(config.api_key_var)
    if key:
        return key
    host = httpx.URL(config.api_base_url).host
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0"):
        return "EMPTY"  # local servers take any key
    raise UsageError(f"no API key: set the environment variable {config.api_key_var} (or choose another with -k)")


def _parse_headers(headers: list[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"bad --header {header!r}: expected 'Name: Value'")
        parsed[name.strip()] = value.strip()
    return parsed


def make_client(config: EvalConfig) -> AsyncOpenAI | CoalescingClient:
    """The run's model client: :func:`verifiers.http.make_openai_client` with the run's limits and headers
    (in a :class:`~verifiers.clients.CoalescingClient` with ``coalesce_requests``)."""
    cap = config.max_concurrent if config.max_concurrent > 0 else 1000  # -1: no cap on rollouts
    # Retries are the rollout's (with backoff and counting), not the client's.
    client = make_openai_client(config.api_base_url, api_key=_api_key(config), timeout=config.timeout,
                                max_connections=cap * 2, headers=_parse_headers(config.headers), max_retries=0,
                                max_response_bytes=config.max_reply_bytes)
    return CoalescingClient(client) if config.coalesce_requests else client


def new_run_dir(config: EvalConfig) -> Path:
    root = config.output_dir or Path("outputs")
    name = f"{parse_env_id(config.env_id).name}--{config.model.replace('/', '--')}"
    return root / "evals" / name / uuid.uuid4().hex[:8]


def load_run_config(run_dir: Path) -> EvalConfig:
    """The config saved in a run folder, for ``--resume``."""
    path = run_dir / "metadata.json"
    if not path.is_file():
        raise UsageError(f"cannot resume: {path} does not exist (is {run_dir} a run folder?)")
    return EvalConfig.model_validate(json.loads(path.read_text())["config"])


def _write_metadata(run_dir: Path, data: dict[str, Any]) -> None:
    tmp = run_dir / "metadata.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, run_dir / "metadata.json")


async def run_eval(
    config: EvalConfig,
    run_dir: Path | None = None,
    resume: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], Path]:
    """Run (or resume) an evaluation; returns ``(outputs, metadata, run_dir)``."""
    env = load_environment(config.env_id, **config.env_args)
    env.set_max_retries(config.max_retries)  # --max-retries N: N retries, N + 1 attempts
    if config.scoring_timeout is not None:
        env.set_scoring_timeout(config.scoring_timeout)
    run_dir = run_dir or new_run_dir(config)
    results_path = run_dir / "results.jsonl"
    done = load_complete_groups(results_path, config.rollouts_per_example) if resume else []
    if not resume and results_path.exists():
        raise UsageError(f"{results_path} already exists; use --resume {run_dir} to continue it")
    rows = expand_rollouts(env.get_eval_dataset(n=config.num_examples), config.rollouts_per_example)
    _check_new_folder(config.save_dataset)
    # Everything that can fail before the first rollout (dataset, API key, headers) runs before the folder
    # exists, so a run that never started leaves nothing behind.
    client = make_client(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = {(str(o.get("task", "default")), int(o["example_id"])) for o in done}
    todo = [r for r in rows if (str(r.get("task", "default")), int(r["example_id"])) not in finished]
    started = datetime.now(timezone.utc)
    base = {"config": config.model_dump(mode="json"), "env_id": config.env_id, "env_args": config.env_args,
            "model": config.model, "base_url": config.api_base_url,
            "num_examples": len(rows) // config.rollouts_per_example,
            "rollouts_per_example": config.rollouts_per_example, "sampling_args": config.merged_sampling_args(),
            "date": started.isoformat(), "version_info": version_info(parse_env_id(config.env_id).module)}
    _write_metadata(run_dir, {**base, "status": "running"})
    progress_total, progress_done = len(rows), len(done)
    if on_progress:
        on_progress(progress_done, progress_total)

    def tick(n: int) -> None:
        nonlocal progress_done
        progress_done += n
        if on_progress:
            on_progress(progress_done, progress_total)

    t0 = time.perf_counter()
    try:
        with ResultsWriter(results_path) as writer:
            results = await generate(env, todo, client, config.model, config.merged_sampling_args(),
                                     max_concurrent=config.max_concurrent,
                                     max_concurrent_scoring=config.max_concurrent_scoring,
                                     independent_scoring=config.independent_scoring,
                                     state_columns=config.state_columns,
                                     on_group=lambda outputs, _states: writer.append_group(outputs), on_progress=tick)
    except Exception as error:
        # Rollout errors are recorded per rollout; what ends up here stopped the run, and the folder says so
        # (``--resume`` still continues it) instead of claiming it is running.
        _write_metadata(run_dir, {**base, "status": "failed", "error": f"{type(error).__name__}: {error}"})
        raise
    finally:
        await env.teardown()
        await client.close()
    outputs = sorted([*done, *results["outputs"]], key=lambda o: (o["example_id"], o.get("rollout_index", 0)))
    metadata = {**base, "status": "complete", "time_ms": (time.perf_counter() - t0) * 1000,
                **summarize(outputs, config.pass_threshold)}
    failures = rollout_failures(outputs)
    if outputs and metadata["num_scored"] == 0 and failures:
        # Not one rollout reached a score (a dead server, a wrong model name): the run failed, as one stopped
        # by an exception does, and says why in the same "error" key.
        metadata.update(status="failed", error=failures)
    _write_metadata(run_dir, metadata)
    if config.save_dataset is not None:
        _save_dataset(outputs, config.save_dataset, results_path)
    return outputs, metadata, run_dir


def _check_new_folder(path: Path | None) -> None:
    # a dataset is written into a new (or empty) folder only: never over a user's files
    if path is not None and path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"--save-dataset: {path} already exists and is not an empty folder; choose a new one")


def _save_dataset(outputs: list[dict[str, Any]], path: Path, results_path: Path) -> None:
    from verifiers.eval.hf_dataset import save_results_dataset

    try:
        save_results_dataset(outputs, path)
    except OSError as error:
        raise UsageError(f"--save-dataset: cannot write {path}: {error} (the results are in {results_path})") from None


__all__ = ["EvalConfig", "run_eval", "load_run_config", "make_client", "new_run_dir"]
