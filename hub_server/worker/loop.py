"""The worker's loop: claim a queued check, run it in a sandbox, record the verdict; sleep when idle."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import logging
import random
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from hub_server.db.checks import CONTRACT, ERROR, FAILED, MISMATCH
from hub_server.db.database import Database
from hub_server.db.records import EvalResult, EvalRollout
from hub_server.services import server_checks
from hub_server.services.environments import PyprojectError, read_sdist_pyproject
from hub_server.storage import Storage, blob_key
from hub_server.worker.sandbox_run import run_check
from hub_server.worker.verdicts import Verdict, contract_verdict, rescore_verdict
from verifiers.sandboxes import AsyncSandboxClient

log = logging.getLogger("hub_server.worker")


@dataclass(frozen=True)
class WorkerConfig:
    """How the worker runs checks (``vf-hub worker check --help`` shows the same)."""

    image_dir: Path
    time_limit_s: float = 300.0  # per check, sandbox start to report
    poll_s: float = 2.0
    stale_after_s: float = 1800.0  # a running claim older than this belonged to a dead worker
    num_examples: int = 3
    rollouts_per_example: int = 1
    rescore_sample: int = 20  # rollouts re-scored per pushed result (whole example groups)
    memory_gb: float = 2.0


def _sdk_version() -> str:
    return importlib.metadata.version("verifiers")


def _fetch_wheel(storage: Storage, sha256: str, filename: str, into: Path) -> Path:
    """The stored wheel, re-hashed: damaged bytes are never run."""
    path = into / filename
    digest = hashlib.sha256()
    with storage.open(blob_key(sha256)) as blob, path.open("wb") as out:
        while chunk := blob.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != sha256:
        raise ValueError(f"the stored {filename} does not hash to its sha256; run vf-hub admin verify")
    return path


def declared_range(pyproject: dict[str, Any] | None) -> tuple[float, float] | None:
    """``[tool.verifiers.check] reward_range = [low, high]`` from the version's sdist, if given and sound."""
    table = ((pyproject or {}).get("tool") or {}).get("verifiers") or {}
    found = (table.get("check") or {}).get("reward_range") if isinstance(table.get("check"), dict) else None
    if (isinstance(found, list) and len(found) == 2 and all(isinstance(v, (int, float)) for v in found)
            and found[0] <= found[1]):
        return float(found[0]), float(found[1])
    return None


def sample_groups(rows: list[EvalRollout], wanted: int, rng: random.Random | None = None) -> list[list[EvalRollout]]:
    """Whole example groups (group reward functions see the group), errored rollouts and all, in an order drawn
    from the operating system's randomness (``rng`` for tests): a pusher who could predict the sample (it was
    seeded by the result's id) would make only those groups honest, and one who knew groups with an errored
    rollout were never sampled could hide anything there. Left out: groups with a rollout that neither errored
    nor has a reward (nothing to compare), and groups where every rollout errored (nothing to score)."""
    groups: dict[int, list[EvalRollout]] = defaultdict(list)
    for row in rows:
        groups[row.example_id].append(row)
    usable = [sorted(g, key=lambda r: r.position) for _, g in sorted(groups.items())
              if all(r.error is not None or r.reward is not None for r in g) and any(r.error is None for r in g)]
    (rng or random.SystemRandom()).shuffle(usable)
    chosen: list[list[EvalRollout]] = []
    for group in usable:
        if sum(len(g) for g in chosen) >= wanted:
            break
        chosen.append(group)
    return chosen


@dataclass(frozen=True)
class RescoreRequest:
    """What the sandbox re-scores, the rewards it must find, and errored rollouts pushed with a reward."""

    request: dict[str, Any]
    pushed: dict[int, float]  # position -> pushed reward, of the rollouts that did not error
    scored_errors: dict[int, float]  # position -> nonzero reward pushed for a rollout that errored


def _rescore_request(db: Database, eval_id: int, project: str, config: WorkerConfig) -> RescoreRequest:
    with db.read() as session:
        result = session.get(EvalResult, eval_id)
        if result is None:
            raise ValueError(f"eval result {eval_id} was withdrawn")
        env_args = result.env_args
        rows = list(session.scalars(select(EvalRollout).where(EvalRollout.eval_id == eval_id)))
        groups = sample_groups(rows, config.rescore_sample)
        # As vf-eval scores a group: its rollouts that did not error, together; an errored one scores 0.
        records = [[{"position": r.position, "example_id": r.example_id, "prompt": r.record.get("prompt", []),
                     "completion": r.record.get("completion", []), "answer": r.record.get("answer", "")}
                    for r in group if r.error is None] for group in groups]
        request = {"mode": "rescore", "name": project, "env_args": env_args if isinstance(env_args, dict) else {},
                   "groups": records}
        pushed = {r.position: float(r.reward) for group in groups for r in group
                  if r.error is None and r.reward is not None}
        scored_errors = {r.position: float(r.reward) for group in groups for r in group
                         if r.error is not None and r.reward not in (None, 0.0)}
    return RescoreRequest(request, pushed, scored_errors)


async def run_claimed(db: Database, storage: Storage, client: AsyncSandboxClient, config: WorkerConfig,
                      claimed: server_checks.Claimed) -> Verdict:
    """Run one claimed check to its verdict."""
    with tempfile.TemporaryDirectory(prefix="vf-hub-worker-") as scratch:
        wheel = _fetch_wheel(storage, claimed.wheel_sha256, claimed.wheel_filename, Path(scratch))
        if claimed.kind == CONTRACT:
            try:
                pyproject = read_sdist_pyproject(storage, *claimed.sdist) if claimed.sdist else None
            except PyprojectError as error:  # hostile or broken metadata is the package's fault: failed, yankable
                return FAILED, f"the version's sdist: {error}", {}
            request = {"mode": "contract", "name": claimed.project, "num_examples": config.num_examples,
                       "rollouts_per_example": config.rollouts_per_example}
            outcome = await run_check(client, config.image_dir, wheel, request, config.time_limit_s, config.memory_gb)
            return contract_verdict(outcome, declared_range(pyproject), _sdk_version())
        assert claimed.eval_id is not None
        rescore = _rescore_request(db, claimed.eval_id, claimed.project, config)
        if rescore.scored_errors:
            position, reward = next(iter(sorted(rescore.scored_errors.items())))
            return MISMATCH, (f"rollout {position} errored but was pushed with reward {reward}: an errored rollout "
                              "scores 0"), {}
        if not rescore.pushed:
            return ERROR, "no rollout without an error to re-score", {}
        outcome = await run_check(client, config.image_dir, wheel, rescore.request, config.time_limit_s,
                                  config.memory_gb)
        return rescore_verdict(outcome, rescore.pushed, _sdk_version())


async def run_one(db: Database, storage: Storage, client: AsyncSandboxClient, config: WorkerConfig) -> bool:
    """Claim and run one check; False when the queue is empty."""
    claimed = server_checks.claim(db, config.stale_after_s)
    if claimed is None:
        return False
    log.info("check %d: %s of %s %s", claimed.id, claimed.kind, claimed.project, claimed.version)
    try:
        status, summary, report = await run_claimed(db, storage, client, config, claimed)
    except Exception as error:  # storage trouble, a withdrawn result: the check could not run, the worker goes on
        log.exception("check %d could not run", claimed.id)
        status, summary, report = ERROR, f"the worker could not run the check: {error}", {}
    server_checks.finish(db, claimed.id, status, summary, report)
    log.info("check %d: %s (%s)", claimed.id, status, summary)
    return True


async def serve(db: Database, storage: Storage, config: WorkerConfig, *, until_idle: bool = False) -> None:
    """Run checks as they are queued, forever (or, with ``until_idle``, until the queue is empty)."""
    async with AsyncSandboxClient() as client:
        while True:
            if not await run_one(db, storage, client, config):
                if until_idle:
                    return
                await asyncio.sleep(config.poll_s)
