"""The orchestrator: keeps rollout groups in flight, turns finished ones into trainer batches, moves weights.

One asyncio loop. ``max_inflight_groups`` groups (``rollouts_per_example`` rollouts of one
example, through the environment's own ``generate``) are always running, spread round
robin over the inference servers; each finished group is replaced at once (continuous
batching), scored into advantages, filed by the difficulty buffer, and waits there.
Step n's batch is the newest ``batch_size`` rollouts at most ``max_off_policy_steps``
behind version n, packed and written for the trainer (:mod:`trainer_adapter.transport`).

Weights: the trainer writes version v to ``weights/step_<v>``. Whenever a newer version
appears the orchestrator sends it to every server (``update``) without stopping the
groups in flight (in-flight updates); groups that fall more than ``max_off_policy_steps``
versions behind are cancelled and counted. Before generating batch n it waits until the
servers hold at least version ``n − max_async_level``: the only point where inference
waits for the trainer (``max_async_level = 0`` is synchronous on-policy RL).

``continuous_batching = False`` with ``max_async_level = 0`` is the synchronous baseline:
each step dispatches only the groups its batch still needs, after its weights are loaded,
so no group is in flight across a weight update and every step waits for its slowest group.

Dropped groups (equal rewards, difficulty filter) cost more inference, never a smaller
batch; but when ``max_fruitless_groups`` groups in a row gave the batch nothing, the run
stops with :class:`NoLearningSignalError` instead of generating forever.

Servers (:mod:`trainer_adapter.orchestrator.servers`): given a ``health`` config, a server that fails its
``GET /health`` or a weight update stops taking groups; its groups in flight are cancelled, counted as
``lost`` (``lost_groups``, ``lost_rollouts`` in the metrics line, the ``lost`` drop reason in Prometheus) and
their problems asked again on the other servers, so the run goes on at their pace. When the server answers
again it loads the current weights before it takes groups.

Validation (:mod:`trainer_adapter.orchestrator.validation`): given a ``GroupValidator``, each finished group is
checked against its server's commitments before the buffer sees it; a rejected group is dropped and counted
(``invalid_groups``, ``invalid/server_<i>``), and a server rejected too often is excluded for the rest of the run.

With ``state_every = E`` it saves its state (:mod:`trainer_adapter.orchestrator.state`) every E
steps, the trainer's checkpoint interval, and :meth:`Orchestrator.restore` continues from one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer_adapter.orchestrator.advantages import assign_advantages
from trainer_adapter.orchestrator.buffer import DifficultyBuffer
from trainer_adapter.orchestrator.config import OrchestratorConfig
from trainer_adapter.orchestrator.errors import NoLearningSignalError
from trainer_adapter.orchestrator.metrics import OrchestratorMetrics, orchestrator_metrics
from trainer_adapter.orchestrator.packing import distribute, pack, packing_efficiency, samples_from_groups
from trainer_adapter.orchestrator.rollouts import RolloutGroup, groups_from_results
from trainer_adapter.orchestrator.servers import HealthConfig, ServerPool, WeightUpdater
from trainer_adapter.orchestrator.staleness import drop_stale
from trainer_adapter.orchestrator.state import (
    OrchestratorState,
    group_from_dict,
    group_to_dict,
    prune_states,
    save_state,
)
from trainer_adapter.orchestrator.task_metrics import batch_task_metrics, step_line
from trainer_adapter.orchestrator.validation import (
    CommitmentUnavailable,
    GroupCheck,
    GroupValidator,
    server_name,
)
from trainer_adapter.run_folder import checkpoint_steps, numbered_steps
from trainer_adapter.transport import write_step

log = logging.getLogger("trainer_adapter.orchestrator")


@dataclass
class _Inflight:
    client: int
    version: int
    example_id: int


class Orchestrator:
    """Drives ``env`` against ``clients`` (one per server) for the trainer in ``output_dir``."""

    def __init__(self, config: OrchestratorConfig, env: Any, clients: Sequence[Any],
                 updaters: Sequence[WeightUpdater], output_dir: Path,
                 task_weights: Mapping[str, float] | None = None, state_every: int = 0,
                 metrics: OrchestratorMetrics | None = None, health: HealthConfig | None = None,
                 weight_dir: str | None = None, validator: GroupValidator | None = None) -> None:
        """``task_weights`` mixes an ``EnvGroup``'s environments (by task name) when problems are drawn;
        ``state_every`` saves the state for ``--resume`` every this many steps (the trainer's checkpoint
        interval; 0: never); ``metrics`` records the Prometheus metrics (default: the process's own);
        ``health`` turns on failover (the updaters must then answer ``healthy``, as ``WeightsClient`` does);
        ``weight_dir`` is the folder the servers hold at the start, which a server that comes back loads (and the
        ``validator``, which checks every group before it trains, its first copy of the weights)."""
        if not clients or len(clients) != len(updaters):
            raise ValueError("need one weight updater per client, and at least one client")
        if config.batch_size % config.rollouts_per_example:
            raise ValueError("batch_size must be a multiple of rollouts_per_example (batches take whole groups)")
        self.config, self.env, self.clients, self.updaters, self.root = config, env, clients, updaters, output_dir
        rows = [dict(r) for r in env.get_dataset()]
        self.rows = {int(r.get("example_id", i)): r for i, r in enumerate(rows)}
        tasks = {i: str(r.get("task") or "default") for i, r in self.rows.items()}
        self.buffer = DifficultyBuffer(sorted(self.rows), config.buffer, seed=config.seed, tasks=tasks,
                                       task_weights=task_weights)
        self.fruitless = 0
        """Groups in a row that gave the batch nothing."""
        self.update_seconds = 0.0
        """Time spent loading weights into the servers since the last batch was written."""
        self.servers = ServerPool(updaters, health, weight_dir)
        self.validator = validator
        self.inflight: dict[asyncio.Task[Any], _Inflight] = {}
        self.counts: Counter[str] = Counter()
        self.metrics = metrics or orchestrator_metrics()
        self.start_step = 0
        """The first batch :meth:`run` writes (k after :meth:`restore` of step k's state)."""
        self.state_every = state_every
        self._pending: list[int] = []
        """Examples to ask before drawing new ones: those in flight when the restored state was saved."""
        self._evals: list[asyncio.Task[None]] = []
        self._watcher: asyncio.Task[None] | None = None
        """The servers' health watcher, while :meth:`run` runs."""
        self._failure_reasons: set[str] = set()
        """Why rollouts failed, each printed once (a misconfigured environment fails every rollout alike)."""
        self._max_steps = 0
        """The step count :meth:`run` was asked for (the console line's denominator)."""

    @property
    def version(self) -> int:
        """The weights version the servers that take rollouts hold."""
        return self.servers.version

    @version.setter
    def version(self, version: int) -> None:
        self.servers.version = version  # a restored run's servers hold this version, in the folder they hold
        self.servers.current = (version, self.servers.current[1])

    async def run(self, max_steps: int) -> None:
        """Write batches for steps ``start_step .. max_steps − 1`` (``0 ..`` unless restored)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._max_steps = max_steps
        if self.validator is not None and self.servers.current[1] is not None:
            self.validator.add_version(self.version, self.servers.current[1], start=True)
        self._watcher = asyncio.create_task(self.servers.watch())
        try:
            for step in range(self.start_step, max_steps):
                started = time.perf_counter()
                await self._wait_for_version(max(step - self.config.max_async_level, 0))
                waited = time.perf_counter() - started
                if self.config.eval_every and step % self.config.eval_every == 0:
                    self._evals.append(asyncio.create_task(self._evaluate(step)))
                groups = await self._collect(step)
                self._write(step, groups, waited, time.perf_counter() - started)
            if self.config.eval_every:
                await self._wait_for_version(max_steps)  # the last step's weights
                self._evals.append(asyncio.create_task(self._evaluate(max_steps)))
                await asyncio.gather(*self._evals)
        finally:
            watcher, self._watcher = self._watcher, None
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            for evaluation in self._evals:
                evaluation.cancel()
            for task in self.inflight:
                task.cancel()
            await asyncio.gather(*self.inflight, return_exceptions=True)
            self.inflight.clear()

    # -- weights --------------------------------------------------------------------------

    def _newest_on_disk(self) -> int:
        return max(numbered_steps(self.root / "weights"), default=0)

    async def _maybe_update(self) -> None:
        """Send the newest weights to every server if they are newer than what the servers hold."""
        newest = self._newest_on_disk()
        if newest <= self.version:
            return
        path = str(self.root / "weights" / f"step_{newest}")
        started = time.perf_counter()
        if self.validator is not None:  # loaded now: the trainer deletes old folders
            self.validator.add_version(newest, path)
        await self.servers.update(path, newest)
        self.update_seconds += time.perf_counter() - started
        self.metrics.weights_version.set(newest)
        self.counts["weight_updates"] += 1
        for task, info in list(self.inflight.items()):
            if self.version - info.version > self.config.max_off_policy_steps:
                task.cancel()
                del self.inflight[task]
                self.counts["cancelled_groups"] += 1
                self.metrics.drop("cancelled", self.config.rollouts_per_example)

    async def _wait_for_version(self, required: int) -> None:
        deadline = time.monotonic() + self.config.weights_timeout_s
        await self._maybe_update()
        while self.version < required:
            if time.monotonic() > deadline:
                raise TimeoutError(f"weights version {required} did not appear under {self.root / 'weights'}")
            await asyncio.sleep(self.config.weights_poll_s)
            await self._maybe_update()
            self._drain_lost_servers()

    async def _evaluate(self, step: int) -> None:
        """Held-out reward of the weights the servers hold now, alongside training (greedy by default).

        In a mix each environment is evaluated on its own ``eval_examples`` rows (the group's eval
        split lists one environment's rows after the other's, so its first rows would be one
        environment's alone), giving ``reward/<task>`` beside the mean over all of them.
        """
        version = self.version
        members: Mapping[str, Any] = getattr(self.env, "env_map", None) or {}
        targets = dict(members) if len(members) > 1 else {"": self.env}
        rewards = await asyncio.gather(*(self._eval_rewards(env) for env in targets.values()))
        every = [r for task_rewards in rewards for r in task_rewards]
        line: dict[str, Any] = {"step": step, "weights_version": version, "reward": sum(every) / max(len(every), 1),
                                "examples": len(every) // self.config.eval_rollouts_per_example,
                                "rollouts": len(every), "temperature": self.config.eval_temperature}
        if len(targets) > 1:
            line |= {f"reward/{task}": sum(r) / max(len(r), 1) for task, r in zip(targets, rewards)}
        with (self.root / "eval_metrics.jsonl").open("a") as f:
            f.write(json.dumps(line) + "\n")

    async def _eval_rewards(self, env: Any) -> list[float]:
        sampling = {"temperature": self.config.eval_temperature, "max_tokens": self.config.max_tokens}
        client = self.clients[next(iter(self.servers.up()), 0)]
        results = await env.evaluate(client, self.config.model_name, sampling,
                                     num_examples=self.config.eval_examples,
                                     rollouts_per_example=self.config.eval_rollouts_per_example)
        return list(results.reward)

    # -- rollouts -------------------------------------------------------------------------

    def next_example(self) -> int:
        """The example the next group asks: a pending one from before a resume, else a fresh draw."""
        if self._pending:
            return self._pending.pop(0)
        return self.buffer.sample_problems(1)[0]

    def _schedule(self, limit: int) -> None:
        while len(self.inflight) < limit:
            client = self.servers.pick()
            if client is None:
                return  # every server is down: nothing to send until one comes back
            example_id = self.next_example()
            rows = [self.rows[example_id]] * self.config.rollouts_per_example
            sampling = {"temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
                        "logprobs": True, "extra_body": {"return_token_ids": True}}
            task = asyncio.create_task(self._generate(rows, client, sampling, self.version))
            self.inflight[task] = _Inflight(client, self.version, example_id)

    async def _generate(self, rows: list[dict[str, Any]], client: int, sampling: dict[str, Any],
                        version: int) -> tuple[Any, GroupCheck | None | CommitmentUnavailable]:
        """One group's ``env.generate`` results and, with a validator, its check (or why there was none)."""
        results = await self.env.generate(rows, self.clients[client], self.config.model_name, sampling)
        if self.validator is None:
            return results, None
        try:
            return results, await self.validator.check(client, results, version)
        except CommitmentUnavailable as e:
            return results, e

    async def _collect(self, step: int) -> list[RolloutGroup]:
        """Whole groups totalling ``batch_size`` rollouts, none too stale for ``step``."""
        selected: list[RolloutGroup] = []
        while (have := sum(len(g.rollouts) for g in selected)) < self.config.batch_size:
            need = self.config.batch_size - have
            while self.buffer.num_rollouts < need:
                self._schedule(self._inflight_limit(need))
                if self.inflight:
                    done, _ = await asyncio.wait(self.inflight, timeout=self.config.weights_poll_s,
                                                 return_when=asyncio.FIRST_COMPLETED)
                else:
                    done = set()
                    await asyncio.sleep(self.config.weights_poll_s)
                for task in done:
                    self._accept(task, self.inflight.pop(task))
                await self._maybe_update()
                self._drain_lost_servers()
            result = drop_stale(self.buffer.pop(need), step, self.config.max_off_policy_steps)
            self.counts["stale_groups"] += result.dropped_groups
            self.metrics.drop("stale", result.dropped_rollouts)
            selected += result.fresh
        return selected

    def _drain_lost_servers(self) -> None:
        """Cancel the groups in flight on servers that went down, count them, and ask their problems again."""
        if self._watcher is not None and self._watcher.done():
            self._watcher.result()  # the watcher stopped on an error: raise it here, in the run
        self.servers.check()
        lost = set(self.servers.take_lost())
        for task, info in list(self.inflight.items()):
            if info.client in lost:
                task.cancel()
                del self.inflight[task]
                self._lose(info)

    def _lose(self, info: _Inflight) -> None:
        """A group that cannot come back from its server: counted, and its problem asked again elsewhere."""
        self._pending.append(info.example_id)
        self.counts["lost_groups"] += 1
        self.counts["lost_rollouts"] += self.config.rollouts_per_example
        self.metrics.drop("lost", self.config.rollouts_per_example)

    def _inflight_limit(self, need: int) -> int:
        """Groups to keep generating: always the maximum, or (synchronous) only what the batch still lacks."""
        if self.config.continuous_batching:
            return self.config.max_inflight_groups
        missing = math.ceil((need - self.buffer.num_rollouts) / self.config.rollouts_per_example)
        return min(self.config.max_inflight_groups, missing)

    def _report_failures(self, reasons: Sequence[str]) -> None:
        for reason in reasons:
            reason = " ".join(reason.split())[:400]
            if reason not in self._failure_reasons:
                self._failure_reasons.add(reason)
                log.warning("rollout failed (counted in failed_rollouts; shown once): %s", reason)

    def _accept(self, task: asyncio.Task[Any], info: _Inflight) -> None:
        results, check = task.result()
        if isinstance(check, CommitmentUnavailable):
            log.warning("inference server %s did not answer for its commitments (%s); its group is asked again",
                        info.client, check)
            self.servers.suspect(info.client)
            self._lose(info)
            return
        grouped = groups_from_results(results, policy_version=info.version)
        if grouped.failed:
            self.servers.suspect(info.client)
        self.counts["failed_rollouts"] += grouped.failed
        self.metrics.rollouts.inc(grouped.failed + sum(len(g.rollouts) for g in grouped.groups))
        self.metrics.drop("failed", grouped.failed)
        self._report_failures(grouped.reasons)
        accepted = False
        if check is not None and not self._validated(check, info, grouped.groups):
            grouped.groups = []
        for group in grouped.groups:
            if len(group.rollouts) == self.config.rollouts_per_example:
                accepted |= self._file(assign_advantages(group, self.config.advantage_std_normalize))
            else:
                self.counts["incomplete_groups"] += 1
                self.metrics.drop("incomplete", len(group.rollouts))
        self.fruitless = 0 if accepted else self.fruitless + 1
        if self.fruitless >= self.config.max_fruitless_groups:
            raise NoLearningSignalError(
                f"the last {self.fruitless} groups gave the batch nothing (so far: filtered "
                f"{dict(self.buffer.filtered)}, failed rollouts {self.counts['failed_rollouts']}, incomplete groups "
                f"{self.counts['incomplete_groups']}). Equal rewards within a group carry no gradient: the model "
                "solves every problem or none. Warm-start it (SFT), make the task easier or harder, or set "
                "orchestrator.buffer.drop_uniform_groups = false; failed rollouts are in the inference logs."
            )

    def _validated(self, check: GroupCheck, info: _Inflight, groups: Sequence[RolloutGroup]) -> bool:
        """Count ``check``; False (and the group dropped, its server perhaps excluded) when it was rejected."""
        self.counts["validated_groups"] += 1
        self.counts["commitment_only_groups"] += not check.tokens_checked
        if check.accepted:
            return True
        rollouts = sum(len(g.rollouts) for g in groups)
        self.counts["invalid_groups"] += 1
        self.counts["invalid_rollouts"] += rollouts
        self.counts[f"invalid/{server_name(info.client)}"] += 1
        self.metrics.drop("invalid", rollouts)
        assert self.validator is not None
        if self.validator.excluded(info.client):
            findings = "; ".join(f"{f.check}: {f.detail}" for f in check.verdict.findings[:2])
            self.servers.exclude(info.client, f"{self.validator.ledger.rejected[server_name(info.client)]} of its "
                                 f"groups rejected by the validator, the last for {findings}")
        return False

    def _file(self, group: RolloutGroup) -> bool:
        """Hand ``group`` to the difficulty buffer; a group its filters refuse counts as rejected, by filter."""
        before = self.buffer.filtered.copy()
        kept = self.buffer.add(group)
        for reason, groups in (self.buffer.filtered - before).items():
            self.metrics.rejected.labels(reason).inc(groups * len(group.rollouts))
        return kept

    # -- batches --------------------------------------------------------------------------

    def _write(self, step: int, groups: list[RolloutGroup], waited: float, elapsed: float) -> None:
        """Metrics line, then (at a checkpointed step) the state, then the batch.

        In this order a trainer checkpoint at step k (which needs batch k − 1) implies the state of
        step k and the metrics line of step k − 1 are on disk: a resume never finds a gap.
        """
        micro_batches = pack(samples_from_groups(groups), self.config.seq_len, self.config.temperature)
        rewards = [r for g in groups for r in g.rewards]
        mixed = len(set(self.buffer.tasks.values())) > 1
        per_task = batch_task_metrics(groups) if mixed else {}
        lags = [step - g.policy_version for g in groups]
        line = {"step": step, "reward": sum(rewards) / len(rewards), "rollouts": len(rewards),
                "off_policy_mean": sum(lags) / len(lags), "off_policy_max": max(lags),
                "servers_version": self.version, "packing_efficiency": packing_efficiency(micro_batches,
                                                                                          self.config.seq_len),
                **per_task, "time/wait_for_weights": waited, "time/update_weights": self.update_seconds,
                "time/step": elapsed, "servers_up": len(self.servers.up()), **dict(self.counts),
                **dict(self.servers.counts),
                **{f"filtered/{k}": v for k, v in self.buffer.filtered.items()}}
        with (self.root / "orchestrator_metrics.jsonl").open("a") as f:
            f.write(json.dumps(line) + "\n")
        self.metrics.batch_written(step, lags, elapsed, waited)
        self.metrics.servers_up.set(len(self.servers.up()))
        log.info("%s", step_line(line, self._max_steps))
        self.update_seconds = 0.0
        if self.state_every and (step + 1) % self.state_every == 0:
            save_state(self.root, self.state(step + 1))
            # A state is only useful beside a checkpoint of its step; older ones than the oldest kept go.
            prune_states(self.root, min(checkpoint_steps(self.root / "checkpoints"), default=0))
        write_step(self.root, step, distribute(micro_batches, self.config.num_train_ranks))

    # -- resume ---------------------------------------------------------------------------

    def state(self, step: int) -> OrchestratorState:
        """The state to continue from at batch ``step`` (call between batches: ``step − 1`` was just chosen)."""
        version, internal, gauss = self.buffer.rng.getstate()
        return OrchestratorState(
            step=step, sampler_rng=(version, list(internal), gauss),
            pending_examples=[info.example_id for info in self.inflight.values()] + self._pending,
            difficulty=dict(self.buffer.difficulty), filtered=dict(self.buffer.filtered), counts=dict(self.counts),
            fruitless=self.fruitless, next_client=self.servers.next_index,
            waiting_groups=[group_to_dict(g) for g in self.buffer.groups],
        )

    def restore(self, state: OrchestratorState, servers_version: int) -> int:
        """Continue from ``state`` with the servers holding weights ``servers_version``; returns the groups dropped.

        Waiting groups more than ``max_off_policy_steps`` behind ``state.step`` are dropped and counted in
        ``stale_groups``, as they would be when a batch is collected. Call before :meth:`run`.
        """
        if set(state.difficulty) != set(self.rows):
            raise ValueError(f"the orchestrator state has {len(state.difficulty)} example ids and the environment "
                             f"{len(self.rows)}, not the same ones: the environment's dataset changed "
                             "since it was saved")
        self.start_step = state.step
        self.version = servers_version
        version, internal, gauss = state.sampler_rng
        self.buffer.rng.setstate((version, tuple(internal), gauss))
        self.buffer.load_state_dict({"difficulty": state.difficulty, "filtered": state.filtered})
        self.counts = Counter(state.counts)
        self.fruitless = state.fruitless
        self.servers.next_index = state.next_client
        self._pending = list(state.pending_examples)
        kept = drop_stale([group_from_dict(g) for g in state.waiting_groups], state.step,
                          self.config.max_off_policy_steps)
        self.buffer.groups = kept.fresh
        self.counts["stale_groups"] += kept.dropped_groups
        return kept.dropped_groups


__all__ = ["Orchestrator", "OrchestratorConfig", "WeightUpdater"]
