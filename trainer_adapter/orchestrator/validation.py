"""Rollouts from inference servers the trainer does not trust, checked before they train (docs/validation.md).

With ``orchestrator.validation.enabled`` every finished group takes one more step before the difficulty buffer:

1. the server that generated it is asked for its commitments (``POST /commitment``) to each model turn of the
   group — every turn is ``prompt_ids + completion_ids`` as the server returned them;
2. a validator thread prefills each turn with the trainer's copy of the weights the commitment names, and runs
   the model checks (:func:`~trainer_adapter.validate.generation.check_generation`): the commitment, and, when
   the commitment names the version the group was sent out with, the logprobs, termination and sampling checks;
3. a rejected group is dropped whole and counted against its server (``invalid_groups``, ``invalid/server_<i>``,
   the ``invalid`` drop reason, ``vf_validator_*``); a server whose share of rejected groups passes
   ``max_rejection_rate`` (after ``min_groups``) is excluded for the rest of the run.

The checks that need no model and guard a submitted batch (assignment, values) have nothing to do here: the
orchestrator chose the problems and scored the rollouts itself. What the servers are trusted with is the
generation, and that is what is checked.

Weights: :meth:`GroupValidator.add_version` loads each version as the orchestrator sends it to the servers (the
trainer deletes old folders later) and keeps the last ``max_off_policy_steps + 1`` in memory: a group further
behind is cancelled anyway. One thread does the loading and the checks, in order, so a check never waits on
the event loop and never sees a half-loaded model.

A turn whose commitment names a newer version than its group was sent with straddled an in-flight weight update:
its tokens may come from either version, so only its commitment (a function of the tokens and the named weights)
is checked, and the group counts under ``commitment_only_groups``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field, ValidationError

from trainer_adapter.inference.errors import InferenceError, InferenceServerError
from trainer_adapter.validate.batch import GeneratedTurn
from trainer_adapter.validate.checks import CheckName, Finding, ModelCheckSettings, Verdict
from trainer_adapter.validate.metrics import RejectionLedger, ValidatorMetrics, validator_metrics
from verifiers.tokens.response_tokens import step_tokens

if TYPE_CHECKING:
    from transformers import PreTrainedModel

MAX_TURNS_PER_REQUEST = 256
"""The commitment route's limit per request (``commitment_route.MAX_ROLLOUTS``): larger groups go in parts."""
_STEP_FOLDER = re.compile(r"step_(\d+)")


class ValidationConfig(ModelCheckSettings):
    """Checking the inference servers' rollouts (``[orchestrator.validation]``); tolerances measured on honest
    float32 servers with the tiny model (bench/toploc.py, tests/trainer_adapter/validate): measure them again
    for another model, dtype or hardware."""

    enabled: bool = Field(False, description="Check every group against its server's commitments before it trains "
                          "(one prefill per model turn in the orchestrator's process).")
    commitment_tolerance: float = Field(2.5e-4, gt=0, description="Largest |committed - recomputed| hidden value.")
    logprob_tolerance: float = Field(7.5e-5, gt=0, description="Largest |claimed - recomputed| logprob, in nats.")
    eos_floor: float = Field(1e-4, ge=0, lt=1, description="Least probability of an EOS that ended a turn.")
    sampling_threshold: float = Field(5.0, gt=0, description="Largest |z| of a group's sampled-token probabilities.")
    interval: int = Field(8, ge=1, description="Commit every interval-th predicting state of a turn (and the last).")
    k: int = Field(8, ge=1, description="Coordinates committed per state.")
    max_rejection_rate: float = Field(
        0.25, ge=0, le=1, description="Exclude a server for the rest of the run once more than this share of its "
        "groups was rejected (after min_groups groups).")
    min_groups: int = Field(4, ge=1, description="Groups a server must have had checked before it can be excluded.")


class CommitmentSource(Protocol):
    """One server's ``/commitment`` route (``WeightsClient`` in production)."""

    async def commitments(self, rollouts: list[dict[str, list[int]]], interval: int, k: int) -> dict[str, Any]: ...


class CommitmentUnavailable(InferenceServerError):
    """The server could not be reached for its commitments: its group is lost, as on a server going down."""


@dataclass(frozen=True)
class GroupCheck:
    """The outcome for one group: the verdict (worker = ``server_<i>``, step = the committed version)."""

    verdict: Verdict
    tokens_checked: bool
    """False: the commitment named a newer version than the group was sent with; only it was checked."""

    @property
    def accepted(self) -> bool:
        return self.verdict.accepted


def server_name(index: int) -> str:
    """How server ``index`` is named in the ledger and the metrics line."""
    return f"server_{index}"


def version_of_folder(weight_dir: str | None, sent: Mapping[str, int], start_version: int) -> int:
    """The trainer version a server's weights folder holds: a folder the run sent (``sent``: resolved path ->
    version), else ``step_N`` for N (a follower's copy fetched from the relays), else the version the run started
    from (``None``: the server still holds what it was started with)."""
    if weight_dir is None:
        return start_version
    if (version := sent.get(str(Path(weight_dir).resolve()))) is not None:
        return version
    match = _STEP_FOLDER.fullmatch(Path(weight_dir).name)
    return int(match.group(1)) if match else start_version


class GroupValidator:
    """Checks groups against their servers' commitments with the trainer's copies of the weights."""

    def __init__(self, config: ValidationConfig, sources: Sequence[CommitmentSource], *, temperature: float,
                 max_tokens: int, keep_versions: int, metrics: ValidatorMetrics | None = None) -> None:
        """``sources``: one commitment route per server, by index; ``keep_versions``: weights kept in memory
        (``max_off_policy_steps + 1``)."""
        self.config, self.sources = config, sources
        self.temperature, self.max_tokens, self.keep_versions = temperature, max_tokens, keep_versions
        self.metrics = metrics or validator_metrics()
        self.ledger = RejectionLedger()
        self.start_version = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="validator")
        self._loads: dict[int, Future[None]] = {}
        self._sent: dict[str, int] = {}
        """Resolved weights folder -> version, for every version added."""
        self._models: dict[int, tuple[PreTrainedModel, int]] = {}
        """version -> (model, eos id); touched on the validator thread only."""

    def add_version(self, version: int, weight_dir: str, start: bool = False) -> None:
        """Load ``weight_dir`` as ``version`` on the validator thread (returns at once); ``start``: the weights
        the servers hold when the run starts (what a server reporting no folder, or one the run never sent and
        not named ``step_N``, holds: :func:`version_of_folder`)."""
        if start:
            self.start_version = version
        self._sent[str(Path(weight_dir).resolve())] = version
        if version not in self._loads:
            self._loads[version] = self._executor.submit(self._load, version, weight_dir)

    async def check(self, server: int, results: Any, dispatched: int) -> GroupCheck | None:
        """Check the group ``server`` generated (an ``env.generate`` result) when sent out at version
        ``dispatched``; None when no rollout of it has a model turn (they are dropped as failed anyway).

        Raises :class:`CommitmentUnavailable` when the server cannot be reached for its commitments.
        """
        started = time.perf_counter()
        raw = group_turns(results)
        if not raw:
            return None
        worker = server_name(server)
        try:
            parts = await self._commitments(server, raw)
        except CommitmentUnavailable:
            raise
        except InferenceError as exc:  # the server refused its own tokens (ids past the vocabulary, too long)
            return self._record(worker, None, [Finding(check="commitment", detail=f"no commitment: {exc}")],
                                started, True)
        try:
            folders = {part["weight_dir"] for part in parts}
            if len(folders) > 1:  # a weight update between two parts: not one version to check against
                raise ValueError(f"the parts of one group's commitments name {len(folders)} weights folders")
            version = version_of_folder(folders.pop(), self._sent, self.start_version)
            commitments = [c for part in parts for c in part["commitments"]]
            turns = [GeneratedTurn.model_validate({**t, "commitment": c})
                     for t, c in zip(raw, commitments, strict=True)]
        except (ValidationError, ValueError, KeyError, TypeError) as exc:  # the server's answer, not a bug here
            return self._record(worker, None, [Finding(check="schema", detail=_first_line(exc))], started, True)
        tokens_checked = version == dispatched
        load = self._loads.get(version)
        if load is None:
            detail = f"the commitment names weights version {version}, which this run never sent to its servers"
            return self._record(worker, version, [Finding(check="commitment", detail=detail)], started, True)
        findings = await asyncio.get_running_loop().run_in_executor(
            self._executor, self._check, version, load, turns, tokens_checked)
        return self._record(worker, version, findings, started, tokens_checked)

    def excluded(self, server: int) -> bool:
        """Whether ``server``'s rejections have passed ``max_rejection_rate`` (after ``min_groups``)."""
        name = server_name(server)
        submitted = self.ledger.submitted[name]
        return submitted >= self.config.min_groups and (
            self.ledger.rejected[name] / submitted > self.config.max_rejection_rate)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- on the validator thread ------------------------------------------------------------

    def _load(self, version: int, weight_dir: str) -> None:
        from trainer_adapter.model.config import ModelConfig
        from trainer_adapter.model.tiny import load_model

        model, tokenizer = load_model(ModelConfig(path=Path(weight_dir)))
        if tokenizer.eos_token_id is None:
            raise ValueError(f"{weight_dir}: the tokenizer names no EOS token, which the termination check needs")
        self._models[version] = (model.eval(), int(tokenizer.eos_token_id))
        for old in sorted(self._models)[: -self.keep_versions]:
            del self._models[old]

    def _check(self, version: int, load: Future[None], turns: list[GeneratedTurn],
               tokens_checked: bool) -> list[Finding]:
        from trainer_adapter.validate.generation import check_generation

        # Done (the one thread runs in order); not awaited on the loop, where a cancelled group would cancel
        # the load for every group after it. A folder that cannot be loaded is the run's error: raised here.
        load.result()
        if version not in self._models:
            return [Finding(check="commitment", detail=f"weights version {version} is more than "
                            f"{self.keep_versions - 1} versions old: no longer held to check against")]
        model, eos_id = self._models[version]
        return check_generation(model, turns, self.config, temperature=self.temperature,
                                max_tokens=self.max_tokens, eos_id=eos_id, tokens_checked=tokens_checked)

    # -- helpers ------------------------------------------------------------------------------

    async def _commitments(self, server: int, turns: list[dict[str, Any]]) -> list[Any]:
        """The server's answers for ``turns``, in parts of at most 256 (its route's limit)."""
        parts: list[Any] = []
        for start in range(0, len(turns), MAX_TURNS_PER_REQUEST):
            tokens = [{"prompt_ids": t["prompt_ids"], "completion_ids": t["completion_ids"]}
                      for t in turns[start:start + MAX_TURNS_PER_REQUEST]]
            try:
                parts.append(await self.sources[server].commitments(tokens, self.config.interval, self.config.k))
            except InferenceServerError as exc:
                raise CommitmentUnavailable(str(exc)) from exc
        return parts

    def _record(self, worker: str, version: int | None, findings: list[Finding], started: float,
                tokens_checked: bool) -> GroupCheck:
        verdict = Verdict(worker=worker, step=version, findings=findings, seconds=time.perf_counter() - started)
        checks: set[CheckName] = verdict.checks
        self.ledger.record(worker, checks)
        self.metrics.record(checks, verdict.seconds)
        return GroupCheck(verdict, tokens_checked)


def group_turns(results: Any) -> list[dict[str, Any]]:
    """Every model turn of a group's rollouts that can train (no error, has tokens), as :class:`GeneratedTurn`
    fields without the commitment: the ids and logprobs the server returned and how the turn ended."""
    turns: list[dict[str, Any]] = []
    for output, state in zip(results["outputs"], results.state, strict=True):
        if output.get("error"):
            continue
        for step in state.get("trajectory") or ():
            tokens = step.get("tokens") or step_tokens(step.get("response")) or {}
            if not tokens.get("completion_ids"):
                continue
            finish, stop_reason = _ending(step.get("response"))
            turns.append({"prompt_ids": list(tokens.get("prompt_ids") or ()),
                          "completion_ids": list(tokens["completion_ids"]),
                          "logprobs": list(tokens.get("completion_logprobs") or ()),
                          # vLLM's finish_reason is "tool_calls" when its parser found a call in a turn that
                          # ended at EOS, so it is checked as a stop
                          "finish_reason": "stop" if finish == "tool_calls" else finish,
                          "stop_string": finish != "length" and stop_reason is not None})
    return turns


def _ending(response: Any) -> tuple[Any, Any]:
    """``(finish_reason, stop_reason)`` of a response's first choice (an SDK object or its JSON dict); vLLM's
    ``stop_reason`` names the stop string or token a turn ended at, and is None at EOS."""
    choices = response.get("choices") if isinstance(response, Mapping) else getattr(response, "choices", None)
    if not choices:
        return None, None
    choice = choices[0]
    if isinstance(choice, Mapping):
        return choice.get("finish_reason"), choice.get("stop_reason")
    extra = getattr(choice, "model_extra", None) or {}
    return getattr(choice, "finish_reason", None), getattr(choice, "stop_reason", extra.get("stop_reason"))


def _first_line(exc: BaseException) -> str:
    return f"the server's commitments do not fit its turns: {str(exc).splitlines()[0][:300]}"


__all__ = ["CommitmentSource", "CommitmentUnavailable", "GroupCheck", "GroupValidator", "ValidationConfig",
           "group_turns", "server_name", "version_of_folder"]
