"""``vf-train rl``: every process of an RL run on one machine.

1. The initial weights become ``OUTPUT/base`` (the tiny model built from its seed, or a copy of
   ``model.path``), so inference and trainer start from the same folder. It lies outside
   ``weights/``, whose old versions the trainer deletes: the servers keep their base folder.
2. ``inference.num_servers`` vLLM servers start on free ports (:mod:`trainer_adapter.inference.vllm_server`,
   in the interpreter ``inference.python``, the one that has vLLM) — or, with ``inference.urls``, the
   servers already running there are loaded with the initial weights.
   A server that stops answering its ``/health`` is drained and polled until it comes back, then loads the
   current weights before it takes rollouts again (``inference.health``,
   :mod:`trainer_adapter.orchestrator.servers`); the launcher does not restart it itself.
3. The trainer starts under torchrun (:mod:`trainer_adapter.train.rl`) with its share of this config.
4. The orchestrator runs here, in this process's event loop, until the last batch is written,
   printing one line per step (reward, and in a mix each environment's reward and share);
   then the trainer finishes its last step and the servers are stopped. Should the trainer exit
   first, the run stops at once with :class:`TrainerExitedError` and the end of ``trainer.log``.
5. ``OUTPUT/reward_curve.png``: reward per step, overall and per environment (:mod:`trainer_adapter.reward_plot`).

Every ``trainer.checkpoint.every`` steps the trainer checkpoints and the orchestrator saves its state;
``run_rl(config, resume=True)`` (``vf-train rl CONFIG --resume``) continues a killed run from the
newest such step (:mod:`trainer_adapter.resume`). Without ``resume`` a folder where a run already made
progress is refused. The servers and the trainer ranks go down with this process, even on ``kill -9``
(:mod:`trainer_adapter.lifeline`).

Several machines: run ``python -m trainer_adapter.inference.vllm_server`` on each inference node, the
trainer with torchrun on the trainer nodes (shared ``output_dir``), and the orchestrator with the
servers' URLs; docs/trainer.md shows the commands.

With ``broadcast.relays`` the servers get their weights from relays, not from ``output_dir``: the relays are
emptied at the start, one follower (``python -m trainer_adapter.broadcast.node``) runs beside each server
this launcher starts (``OUTPUT/broadcast_<i>.log``), and each update publishes the folder to the relays and
waits for the server to name it (:mod:`trainer_adapter.broadcast.relayed`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Coroutine
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.relayed import RelayBroadcast, RelayedAdmin, clear_relays
from trainer_adapter.errors import RunFolderError, TrainerConfigError
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.lifeline import LAUNCHER_PID_ENV, parent_death_signal, stop_process
from trainer_adapter.model.config import ModelConfig, check_model_folder
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.config import OrchestratorConfig
from trainer_adapter.orchestrator.env_mix import load_env_mix
from trainer_adapter.orchestrator.errors import TrainerExitedError
from trainer_adapter.orchestrator.orchestrator import Orchestrator
from trainer_adapter.orchestrator.state import load_state
from trainer_adapter.orchestrator.validation import GroupValidator
from trainer_adapter.rendezvous import publish_launch, wait_healthy
from trainer_adapter.resume import (
    RUN_CONFIG,
    ResumePoint,
    check_fresh_folder,
    find_resume_point,
    lock_run_folder,
    rewind,
)
from trainer_adapter.reward_plot import PlotConfig, plot_run
from trainer_adapter.rl_config import EnvConfig, RLRunConfig, RunCheckpointConfig, ServersConfig, TrainerSection
from trainer_adapter.train.config import CheckpointConfig
from trainer_adapter.train.export import write_hf_folder
from trainer_adapter.train.launch import (
    default_threads,
    free_port,
    multinode_command,
    rank_environment,
    torchrun_command,
)
from trainer_adapter.train.rl import RLTrainerConfig
from verifiers.errors import UsageError
from verifiers.metrics_server import serve_configured

T = TypeVar("T")
CLIENT_KEEPALIVE_S = 300.0  # under the servers' keep_alive_s (600), so the client retires a connection first


# What the trainer ranks run, and the config they read from the run folder (every trainer node reads it there).
RANK_MODULE = "trainer_adapter.train.rl"
TRAINER_CONFIG = "trainer_config.json"


def prepare_initial_weights(config: RLRunConfig) -> Path:
    """``OUTPUT/base``: the folder every process starts from (version 0); kept if it exists."""
    dest = config.output_dir / "base"
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if config.model.path is not None:
        shutil.copytree(config.model.path, dest)
    else:
        model, tokenizer = load_model(config.model)
        write_hf_folder(model.state_dict(), model, tokenizer, dest)
    return dest


def trainer_config(config: RLRunConfig, initial: Path, resume_step: int | None = None) -> RLTrainerConfig:
    """The trainer process's config: the run's model folder, length and output folder, plus its section.

    It resumes from ``checkpoints/step_<resume_step>`` and from nothing else: the launcher decides the
    step, so that trainer and orchestrator agree on it.
    """
    section = config.trainer
    checkpoint = CheckpointConfig(every=section.checkpoint.every, keep=section.checkpoint.keep, resume=False)
    return RLTrainerConfig(
        model=ModelConfig(path=initial), optimizer=section.optimizer, loss=section.loss, checkpoint=checkpoint,
        max_steps=config.max_steps, output_dir=config.output_dir, num_processes=section.num_processes,
        threads_per_process=section.threads_per_process or default_threads(section.num_processes),
        precision=section.precision, resume_step=resume_step, metrics=section.metrics,
    )


def trainer_command(config: RLRunConfig, launch_id: str) -> list[str]:
    """The trainer ranks' command on this node; with several trainer nodes every one of them runs it
    (:mod:`trainer_adapter.cluster`), meeting at a rendezvous named after the launch."""
    args = [str(config.output_dir / TRAINER_CONFIG)]
    section = config.trainer
    if section.num_nodes == 1:
        return torchrun_command(RANK_MODULE, args, section.num_processes)
    assert section.rendezvous is not None  # the config's validator
    return multinode_command(RANK_MODULE, args, section.num_processes, section.num_nodes, section.rendezvous,
                             run_id=f"vf-rl-{launch_id}")


def check_run_folder(config: RLRunConfig, resume: bool) -> ResumePoint | None:
    """Check, without changing anything, that ``output_dir`` fits the command; the step to resume from, if ``resume``.

    A new run needs a folder where no run made progress yet; a resumed run needs the config the run
    started with and a step to continue from (:func:`trainer_adapter.resume.find_resume_point`).
    """
    root = config.output_dir
    if not resume:
        check_fresh_folder(root)
        return None
    if not root.is_dir():
        raise RunFolderError(f"{root} does not exist: there is no run to resume")
    point = find_resume_point(root, config.model_dump(mode="json"), config.trainer.checkpoint.every)
    load_state(point.state)  # refuse a damaged state now, before anything starts
    return point


def start_run_folder(config: RLRunConfig) -> None:
    """Set ``output_dir`` up for a new run: record its config, and drop a ``base`` that a run which failed
    before its first batch may have left (perhaps of another model)."""
    root = config.output_dir
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "base", ignore_errors=True)
    (root / RUN_CONFIG).write_text(config.model_dump_json(indent=2))


def run_rl(config: RLRunConfig, resume: bool = False) -> int:
    """Run every process to the end; returns the trainer's exit status.

    ``resume``: continue the run in ``output_dir`` from its newest checkpointed step (see
    :mod:`trainer_adapter.resume`). Raises :class:`RunFolderError`, before anything starts, when the
    folder does not fit (nothing to resume, another config's run, or a run already there).
    """
    from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
    from trainer_adapter.inference.vllm_server import InferenceServer
    from verifiers.clients import CoalescingClient
    from verifiers.http import make_openai_client

    if not config.inference.urls and not config.inference.python.exists():
        raise TrainerConfigError(f"inference.python {config.inference.python} does not exist: run bash "
                                 "scripts/setup_vllm_cpu.sh, or point it at an interpreter that has vLLM")
    if config.broadcast.enabled and run_secret() is None:
        raise TrainerConfigError(f"broadcast.relays: set {RUN_SECRET_VAR} to the run secret the relays were started "
                                 "with; they take writes only with it (docs/inference.md)")
    if config.inference.urls and run_secret() is None:
        raise TrainerConfigError(f"inference.urls: set {RUN_SECRET_VAR} to the run secret those servers were started "
                                 "with; their weight routes answer nothing else (docs/inference.md)")
    root = config.output_dir
    point = check_run_folder(config, resume)
    if point is not None and point.step >= config.max_steps:
        print(f"nothing to resume: the run in {root} reached max_steps ({config.max_steps})", flush=True)
        return 0
    name = config.orchestrator.model_name
    env, task_weights = load_env_mix(config.env_entries())  # a bad env fails before the folder is touched
    if config.model.path is not None and not (root / "base").is_dir():
        check_model_folder(config.model.path)  # so does a bad model.path (a resumed run starts from base/)
    relayed = config.broadcast.enabled
    with ExitStack() as stack:
        stack.callback(lock_run_folder(root).close)  # held until this process ends, however it ends
        if relayed:  # no relay answering fails here, before anything starts
            asyncio.run(clear_relays(config.broadcast))
        try:  # a taken port fails here, before anything starts
            endpoint = serve_configured(config.orchestrator.metrics)
        except UsageError as e:
            raise TrainerConfigError(f"orchestrator.metrics.port: {e}") from None
        if endpoint is not None:
            stack.callback(endpoint.close)
        if point is None:
            start_run_folder(config)
        initial = prepare_initial_weights(config)
        (root / TRAINER_CONFIG).write_text(
            trainer_config(config, initial, point.step if point else None).model_dump_json(indent=2))
        launch_id = publish_launch(root)  # other nodes of the run start from here (trainer_adapter.cluster)
        servers = [
            InferenceServer(
                config.inference.server_config(initial, name, free_port()), python=config.inference.python,
                log_path=root / f"inference_{i}.log", die_with_parent=True,
            )
            for i in range(0 if config.inference.urls else config.inference.num_servers)
        ]
        urls = config.inference.urls or [s.base_url for s in servers]
        # The SDK's keep-alive transport: the orchestrator's CPU goes to rollouts, not to httpx's pool scans.
        # Connections idle while the trainer steps; kept past that, a step reuses the last one's instead of
        # opening batch-size new ones (servers started here keep them longer still: InferenceConfig.keep_alive_s;
        # one that closes earlier costs a transparent reconnect).
        # With relays, one publisher for the run: each version goes up once however many servers ask for it.
        broadcast = RelayBroadcast(config.broadcast) if relayed else None
        clients: list[Any] = [
            make_openai_client(url, api_key="local", max_retries=3, keepalive_expiry=CLIENT_KEEPALIVE_S) for url in urls
        ]
        if config.orchestrator.coalesce_requests:
            clients = [CoalescingClient(client) for client in clients]
        updaters = _admins(urls, broadcast)
        # What the servers hold once started: a server that goes down and comes back loads the newest of it
        # and of the weights sent since.
        start_weights = point.weights if point is not None else initial
        validator = _validator(config.orchestrator, urls)
        if validator is not None:
            stack.callback(validator.close)
        orchestrator = Orchestrator(config.orchestrator, env, clients, updaters, root, task_weights=task_weights,
                                    state_every=config.trainer.checkpoint.every, health=config.inference.health,
                                    weight_dir=str(start_weights), validator=validator)
        if point is not None:
            _resume_orchestrator(orchestrator, point, root)
        for server in servers:
            server.launch()
            stack.callback(server.stop)
        for i, server in enumerate(servers if relayed else []):
            stack.callback(stop_process, start_follower(config, root, i, server.base_url), 30)
        for server in servers:
            server.wait_ready(config.inference.start_timeout_s)
        if config.inference.urls or point is not None:
            # Servers of an earlier run hold other weights, and a resumed run's servers start on base:
            # each is loaded with the version the run continues from (0: the initial folder), once it answers
            # (servers named in urls may be starting with this launch, on other nodes).
            asyncio.run(_load_everywhere(urls, str(start_weights), config.inference.start_timeout_s,
                                         config.broadcast if relayed else None))
        trainer_log = root / "trainer.log"
        with trainer_log.open("ab") as log:
            trainer = subprocess.Popen(
                trainer_command(config, launch_id),
                stdout=log, stderr=subprocess.STDOUT,
                env=rank_environment({**os.environ, LAUNCHER_PID_ENV: str(os.getpid())}),
                preexec_fn=parent_death_signal(),
            )
        stack.callback(stop_process, trainer, 30)
        work = while_running(orchestrator.run(config.max_steps), trainer, trainer_log, config.trainer_poll_s)
        asyncio.run(_closing(work, broadcast) if broadcast is not None else work)
        status = trainer.wait()
    if status == 0:
        print(f"reward curve: {plot_run(PlotConfig(run_dir=root))}", flush=True)
    return status


def _resume_orchestrator(orchestrator: Orchestrator, point: ResumePoint, root: Path) -> None:
    """Put the folder back to ``point`` and the orchestrator in the state it had there; say what was dropped."""
    state = load_state(point.state)
    try:
        stale = orchestrator.restore(state, servers_version=point.step)
    except ValueError as e:
        raise RunFolderError(f"cannot resume {root}: {e}") from None
    report = rewind(root, point.step)
    orchestrator.counts["dropped_batches_on_resume"] += len(report.dropped_batches)
    print(f"resuming {root} at step {point.step} ({point.checkpoint}): {report.summary()}; "
          f"{stale} waiting group(s) more than max_off_policy_steps behind, dropped", flush=True)


async def _load_everywhere(urls: list[str], weight_dir: str, timeout_s: float,
                           broadcast: BroadcastConfig | None = None) -> None:
    """Load ``weight_dir`` into every server once it answers; with ``broadcast``, through the relays."""
    relays = RelayBroadcast(broadcast) if broadcast is not None else None
    updaters = _admins(urls, relays)
    try:
        await wait_healthy(urls, updaters, timeout_s)
        await asyncio.gather(*(u.update(weight_dir) for u in updaters))
    finally:
        await asyncio.gather(*(u.aclose() for u in updaters))
        if relays is not None:
            await relays.aclose()


def _admins(urls: list[str], broadcast: RelayBroadcast | None) -> list[Any]:
    """Each server's weight admin: POSTs of the run folder's paths, or, with relays, publish-and-wait."""
    if broadcast is not None:
        return [RelayedAdmin(broadcast, url) for url in urls]
    return [WeightsClient(url) for url in urls]


def _validator(config: OrchestratorConfig, urls: list[str]) -> GroupValidator | None:
    """The check of every group against its server's commitments, when ``validation.enabled``."""
    if not config.validation.enabled:
        return None
    return GroupValidator(config.validation, [WeightsClient(url) for url in urls], temperature=config.temperature,
                          max_tokens=config.max_tokens, keep_versions=config.max_off_policy_steps + 1)


async def _closing(work: Coroutine[Any, Any, T], broadcast: RelayBroadcast) -> T:
    """``work``, then the publisher closed in the same event loop (its connections belong to that loop)."""
    try:
        return await work
    finally:
        await broadcast.aclose()


FOLLOWER_MODULE = "trainer_adapter.broadcast.node"


def follower_command(config: BroadcastConfig, fetch_dir: Path, server_url: str) -> list[str]:
    """The follower beside one server: the run's ``[broadcast]`` settings, its own ``fetch_dir``."""
    settings = config.model_dump(mode="json", exclude={"fetch_dir"})
    # Values as JSON, which TOML reads the same (node.py parses KEY=VALUE as TOML): lists, numbers, strings.
    overrides = [f"{key}={json.dumps(value)}" for key, value in settings.items()]
    return [sys.executable, "-m", FOLLOWER_MODULE, *overrides, f"fetch_dir={json.dumps(str(fetch_dir))}",
            "--server", server_url]


def start_follower(config: RLRunConfig, root: Path, index: int, server_url: str) -> subprocess.Popen[bytes]:
    """Server ``index``'s follower, logging to ``OUTPUT/broadcast_<index>.log``, going down with this process."""
    fetch_dir = config.broadcast.fetch_dir.resolve() / f"server_{index}"
    with (root / f"broadcast_{index}.log").open("ab") as log:
        return subprocess.Popen(follower_command(config.broadcast, fetch_dir, server_url), stdout=log,
                                stderr=subprocess.STDOUT, preexec_fn=parent_death_signal())  # fmt: skip


async def while_running(work: Coroutine[Any, Any, T], process: subprocess.Popen[bytes], log_path: Path,
                        poll_s: float = 0.5) -> T:
    """Await ``work`` while ``process`` runs; if the process fails first, cancel ``work`` and raise.

    The orchestrator would otherwise wait for weights that no one will ever write; failing at
    once with the end of the process's log says why. A process that exits with status 0 has
    done its part (the orchestrator may still be evaluating the last weights): ``work`` goes on.
    """
    task = asyncio.ensure_future(work)
    while not task.done():
        await asyncio.wait({task}, timeout=poll_s)
        if not task.done() and process.poll() not in (None, 0):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise TrainerExitedError(
                f"the trainer exited with status {process.returncode} before the run ended; "
                f"last lines of {log_path}:\n{log_tail(log_path)}"
            )
    return task.result()


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file ('' if it does not exist)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


__all__ = ["EnvConfig", "RLRunConfig", "RunCheckpointConfig", "ServersConfig", "TrainerSection", "check_run_folder",
           "follower_command", "log_tail", "prepare_initial_weights", "run_rl", "start_follower", "start_run_folder",
           "trainer_config", "while_running"]
