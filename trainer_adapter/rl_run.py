"""``vf-train rl``: every process of an RL run on one machine.

1. The initial weights become ``OUTPUT/base`` (the tiny model built from its seed, or a copy of
   ``model.path``), so inference and trainer start from the same folder. It lies outside
   ``weights/``, whose old versions the trainer deletes: the servers keep their base folder.
2. ``inference.num_servers`` vLLM servers start on free ports (:mod:`trainer_adapter.inference.vllm_server`,
   in the interpreter ``inference.python``, the one that has vLLM).
3. The trainer starts under torchrun (:mod:`trainer_adapter.train.rl`) with its share of this config.
4. The orchestrator runs here, in this process's event loop, until the last batch is written;
   then the trainer finishes its last step and the servers are stopped.

Several machines: run ``python -m trainer_adapter.inference.vllm_server`` on each inference node, the
trainer with torchrun on the trainer nodes (shared ``output_dir``), and the orchestrator with the
servers' URLs; docs/trainer.md shows the commands.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

import verifiers as vf
from trainer_adapter.loss import LossConfig
from trainer_adapter.model.tiny import ModelConfig, load_model
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.train.checkpoint import CheckpointConfig
from trainer_adapter.train.export import write_hf_folder
from trainer_adapter.train.launch import free_port, torchrun_command
from trainer_adapter.train.optimizer import OptimizerConfig
from trainer_adapter.train.rl import RLTrainerConfig


class EnvConfig(BaseModel):
    """The environment to train on."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Environment id, as vf.load_environment takes it.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments for the environment's loader.")


class ServersConfig(BaseModel):
    """The vLLM servers this launcher starts."""

    model_config = ConfigDict(extra="forbid")

    num_servers: int = Field(1, gt=0, description="vLLM servers to start (one client each, round robin).")
    python: Path = Field(Path(".venv-vllm/bin/python"), description="Interpreter that has vLLM installed.")
    max_model_len: int = Field(1024, gt=0, description="Longest prompt + completion, in tokens.")
    max_num_seqs: int = Field(64, gt=0, description="Sequences each server runs at once.")
    kv_cache_gib: int = Field(1, gt=0, description="CPU only: GiB of KV cache per server.")
    start_timeout_s: float = Field(600.0, gt=0, description="Give up when a server is not ready after this.")


class TrainerSection(BaseModel):
    """The trainer's own settings (model, length and folder come from the run)."""

    model_config = ConfigDict(extra="forbid")

    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig, description="AdamW and its schedule.")
    loss: LossConfig = Field(default_factory=LossConfig, description="The IcePop mask.")
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig, description="Checkpoints and resume.")
    num_processes: int = Field(1, gt=0, description="Trainer ranks (torchrun --nproc-per-node).")
    threads_per_process: int = Field(1, gt=0, description="CPU threads per trainer rank.")


class RLRunConfig(BaseModel):
    """An RL run on one machine: environment, initial model, and each process's settings."""

    model_config = ConfigDict(extra="forbid")

    env: EnvConfig = Field(description="The environment.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The initial model.")
    max_steps: int = Field(20, gt=0, description="Trainer steps.")
    output_dir: Path = Field(Path("outputs/rl"), description="Run folder: weights, batches, metrics, logs.")
    trainer: TrainerSection = Field(default_factory=TrainerSection, description="The trainer.")
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig, description="The orchestrator.")
    inference: ServersConfig = Field(default_factory=ServersConfig, description="The inference servers.")


def prepare_initial_weights(config: RLRunConfig) -> Path:
    """``OUTPUT/base``: the folder every process starts from (version 0)."""
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


def trainer_config(config: RLRunConfig, initial: Path) -> RLTrainerConfig:
    """The trainer process's config: the run's model folder, length and output folder, plus its section."""
    section = config.trainer
    return RLTrainerConfig(
        model=ModelConfig(path=initial), optimizer=section.optimizer, loss=section.loss, checkpoint=section.checkpoint,
        max_steps=config.max_steps, output_dir=config.output_dir, num_processes=section.num_processes,
        threads_per_process=section.threads_per_process,
    )


def run_rl(config: RLRunConfig) -> int:
    """Run every process to the end; returns the trainer's exit status."""
    from openai import AsyncOpenAI

    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.inference.weights_client import WeightsClient

    root = config.output_dir
    root.mkdir(parents=True, exist_ok=True)
    initial = prepare_initial_weights(config)
    env = vf.load_environment(config.env.id, **config.env.args)  # fail on a bad env before starting anything
    (root / "trainer_config.json").write_text(trainer_config(config, initial).model_dump_json(indent=2))
    name = config.orchestrator.model_name
    with ExitStack() as stack:
        servers = [
            InferenceServer(
                InferenceConfig(model=str(initial), served_model_name=name, port=free_port(),
                                max_model_len=config.inference.max_model_len,
                                max_num_seqs=config.inference.max_num_seqs, kv_cache_gib=config.inference.kv_cache_gib),
                python=config.inference.python, log_path=root / f"inference_{i}.log",
            )
            for i in range(config.inference.num_servers)
        ]
        for server in servers:
            server.launch()
            stack.callback(server.stop)
        for server in servers:
            server.wait_ready(config.inference.start_timeout_s)
        with (root / "trainer.log").open("ab") as log:
            trainer = subprocess.Popen(
                torchrun_command("trainer_adapter.train.rl", [str(root / "trainer_config.json")],
                                 config.trainer.num_processes),
                stdout=log, stderr=subprocess.STDOUT,
            )
        stack.callback(_stop, trainer)
        clients = [AsyncOpenAI(base_url=s.base_url, api_key="local", max_retries=3) for s in servers]
        updaters = [WeightsClient(s.base_url) for s in servers]
        orchestrator = Orchestrator(config.orchestrator, env, clients, updaters, root)
        asyncio.run(orchestrator.run(config.max_steps))
        return trainer.wait()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


__all__ = ["EnvConfig", "RLRunConfig", "ServersConfig", "TrainerSection", "prepare_initial_weights", "run_rl",
           "trainer_config"]
