"""The config of ``vf-train rl``: the environment, the initial model, and each process's section.

One model per component (the trainer's, the orchestrator's, the servers', the relays'), gathered in
:class:`RLRunConfig`; ``vf-train rl``'s options are generated from it. :mod:`trainer_adapter.rl_run` runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.inference.vllm_server import TOOL_CALL_PARSER_HELP, InferenceConfig
from trainer_adapter.loss.config import LossConfig
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.orchestrator.config import OrchestratorConfig
from trainer_adapter.orchestrator.env_mix import EnvConfig
from trainer_adapter.orchestrator.servers import HealthConfig
from trainer_adapter.train.config import OptimizerConfig
from trainer_adapter.train.device_plan import PRECISION_HELP, Precision
from verifiers.metrics_server import MetricsConfig


class ServersConfig(BaseModel):
    """The vLLM servers this launcher starts."""

    model_config = ConfigDict(extra="forbid")

    num_servers: int = Field(1, gt=0, description="vLLM servers to start (one client each, round robin).")
    python: Path = Field(Path(".venv-vllm/bin/python"), description="Interpreter that has vLLM installed.")
    max_model_len: int = Field(1024, gt=0, description="Longest prompt + completion, in tokens.")
    max_num_seqs: int = Field(64, gt=0, description="Sequences each server runs at once.")
    kv_cache_gib: int = Field(1, gt=0, description="CPU only: GiB of KV cache per server.")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="GPU only: share of the GPU's memory each server takes (vLLM's default 0.9 "
        "leaves none for a trainer on the same GPU).")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "float32", description="Servers' weight dtype; float32 keeps logprobs comparable to an fp32 trainer.")
    tool_call_parser: str | None = Field(None, min_length=1, pattern=r"^[A-Za-z0-9_.-]+$",
                                         description=TOOL_CALL_PARSER_HELP)
    start_timeout_s: float = Field(600.0, gt=0, description="Give up when a server is not ready after this.")
    urls: list[str] = Field(
        default_factory=list, description="Use these running servers (their /v1 URLs, started by "
        "trainer_adapter.inference.vllm_server) instead of starting num_servers; each first loads the initial weights.",
    )
    health: HealthConfig = Field(
        default_factory=HealthConfig, description="Failover: how often each server's /health is asked, and how a "
        "down server is polled until it comes back (it then loads the current weights before taking rollouts).",
    )

    def server_config(self, model: str | Path, served_model_name: str, port: int) -> InferenceConfig:
        """One server of this section on ``model`` (what a server passed in ``urls`` should be started with)."""
        return InferenceConfig(model=str(model), served_model_name=served_model_name, port=port,
                               max_model_len=self.max_model_len, max_num_seqs=self.max_num_seqs,
                               kv_cache_gib=self.kv_cache_gib, gpu_memory_utilization=self.gpu_memory_utilization,
                               dtype=self.dtype, tool_call_parser=self.tool_call_parser)


class RunCheckpointConfig(BaseModel):
    """How often the run is checkpointed (trainer and orchestrator together), so that --resume can continue it."""

    model_config = ConfigDict(extra="forbid")

    every: int = Field(
        10, ge=0, description="Checkpoint the trainer (model, optimizer) and save the orchestrator's state every this "
        "many steps; vf-train rl --resume continues from the newest (0: never, and the run cannot be resumed).",
    )
    keep: int = Field(2, ge=1, description="Newest checkpoints kept on disk (with their weights folders).")


class TrainerSection(BaseModel):
    """The trainer's own settings (model, length and folder come from the run)."""

    model_config = ConfigDict(extra="forbid")

    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig, description="AdamW and its schedule.")
    loss: LossConfig = Field(default_factory=LossConfig, description="The policy loss and its bounds.")
    checkpoint: RunCheckpointConfig = Field(
        default_factory=RunCheckpointConfig, description="Checkpoints, which --resume continues from.")
    num_processes: int = Field(1, gt=0, description="Trainer ranks per trainer node (torchrun --nproc-per-node).")
    num_nodes: int = Field(
        1, gt=0, description="Trainer nodes (torchrun --nnodes). Above 1, this node's trainer waits at rendezvous "
        "for the others, each started with `python -m trainer_adapter.cluster trainer-node` (docs/cluster.md).")
    rendezvous: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.:\[\]-]+:[0-9]{1,5}$", description="HOST:PORT where the trainer nodes meet "
        "(torchrun's c10d rendezvous; an address of this node the others reach). Required when num_nodes > 1.")
    threads_per_process: int | None = Field(
        None, gt=0, description="CPU threads per trainer rank; unset: the machine's cores shared among the ranks "
        "(their idle threads wait passively, so they yield to vLLM).")
    precision: Precision = Field("auto", description=PRECISION_HELP)
    metrics: MetricsConfig = Field(
        default_factory=MetricsConfig, description="Rank 0's Prometheus endpoint; off unless metrics.port is set "
        "(not orchestrator.metrics.port: the trainer is another process).")


class RLRunConfig(BaseModel):
    """An RL run on one machine: environment, initial model, and each process's settings."""

    model_config = ConfigDict(extra="forbid")

    env: EnvConfig = Field(default_factory=EnvConfig, description="The environment (or list several under envs).")
    envs: list[EnvConfig] = Field(
        default_factory=list, description="Several environments mixed by weight ([[envs]] tables: id, args, weight, "
        "name) instead of env.",
    )
    model: ModelConfig = Field(default_factory=ModelConfig, description="The initial model.")
    max_steps: int = Field(20, gt=0, description="Trainer steps.")
    output_dir: Path = Field(Path("outputs/rl"), description="Run folder: weights, batches, metrics, logs.")
    trainer: TrainerSection = Field(default_factory=TrainerSection, description="The trainer.")
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig, description="The orchestrator.")
    inference: ServersConfig = Field(default_factory=ServersConfig, description="The inference servers.")
    trainer_poll_s: float = Field(0.5, gt=0, description="How often to check that the trainer process still runs.")
    broadcast: BroadcastConfig = Field(
        default_factory=BroadcastConfig, description="Weights through relays instead of the run folder (relays "
        "empty: the servers load OUTPUT/weights/step_N themselves, as without this table).")

    @model_validator(mode="after")
    def _one_env_source(self) -> RLRunConfig:
        if self.envs and self.env.id is not None:
            raise ValueError("set either env.id or envs, not both")
        if not self.envs and self.env.id is None:
            raise ValueError("env.id is required (or list several environments under [[envs]])")
        if any(e.id is None for e in self.envs):
            raise ValueError("every entry of envs needs an id")
        return self

    @model_validator(mode="after")
    def _ranks_match(self) -> RLRunConfig:
        # The orchestrator deals each step's micro-batches to the trainer's ranks: the counts must agree.
        ranks = self.trainer.num_processes * self.trainer.num_nodes
        if "num_train_ranks" not in self.orchestrator.model_fields_set:
            self.orchestrator.num_train_ranks = ranks
        elif self.orchestrator.num_train_ranks != ranks:
            raise ValueError("orchestrator.num_train_ranks must equal trainer.num_processes × trainer.num_nodes")
        if self.trainer.num_nodes > 1 and self.trainer.rendezvous is None:
            raise ValueError("trainer.num_nodes > 1 needs trainer.rendezvous (HOST:PORT the trainer nodes meet at)")
        return self

    @model_validator(mode="after")
    def _metrics_ports_differ(self) -> RLRunConfig:
        # Two processes of the run on one machine: the second to bind a shared port would fail mid-start.
        port = self.orchestrator.metrics.port
        if port and port == self.trainer.metrics.port:
            raise ValueError(f"orchestrator.metrics.port and trainer.metrics.port are both {port}: the orchestrator "
                             "and the trainer are two processes, give each its own port")
        return self

    @model_validator(mode="after")
    def _validation_in_float32(self) -> RLRunConfig:
        # The validator's tolerances are absolute, measured on float32 servers; in bfloat16 rounding alone moves
        # hidden values as much as another model would (docs/validation.md).
        if self.orchestrator.validation.enabled and self.inference.dtype != "float32":
            raise ValueError(f"orchestrator.validation needs inference.dtype = float32 (not {self.inference.dtype}): "
                             "its tolerances are absolute, and bfloat16 needs relative ones, which are not built")
        return self

    def env_entries(self) -> list[EnvConfig]:
        """The environments of the run: ``envs``, or the single ``env``."""
        return list(self.envs) or [self.env]


__all__ = ["EnvConfig", "RLRunConfig", "RunCheckpointConfig", "ServersConfig", "TrainerSection"]
