"""The main job's config: the model, the environment, and each phase's settings (SFT, RL, evaluation, server).

One model built by one ``load_config`` call (``vf-train main CONFIG [--key value ...]``); the phases' own
configs are derived from it in :mod:`trainer_adapter.main_job`. Kept apart so that validating a config (the
CLI's options, ``--check``) imports neither the job's processes nor its reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainer_adapter.model.config import LoraSettings
from trainer_adapter.train.device_plan import PRECISION_HELP, Precision

TINY = "tiny"


class SFTPhase(BaseModel):
    """The warm start: supervised fine-tuning on the environment's training rows."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Warm-start by SFT before RL (the tiny model needs it: it starts "
                          "from random weights).")

    steps: int = Field(800, gt=0, description="SFT optimizer steps at most (the cosine schedule spans them).")
    stop_at_loss: float | None = Field(
        0.4, gt=0, description="Stop SFT once its training loss (mean of 25 steps) is at most this; unset: run all "
        "steps. Seeds reach a given loss after very different step counts (0.04 vs 0.38 at step 600).")
    lr: float = Field(2e-3, gt=0, description="SFT peak learning rate (cosine decay after 10 warm-up steps).")
    batch_size: int = Field(32, gt=0, description="SFT examples per step.")
    num_processes: int = Field(1, gt=0, description="SFT trainer ranks (one is fastest for the tiny model).")
    num_layers: int = Field(
        4, gt=0, description="Decoder layers of the model built in code; 2 layers (128 wide) learn carries on some "
        "seeds only.")
    hidden_size: int = Field(128, gt=0, description="Width of the model built in code (768: the ~100M GPU size).")
    num_heads: int = Field(4, gt=0, description="Attention heads of the model built in code (hidden_size divides).")
    num_kv_heads: int = Field(2, gt=0, description="Key/value heads of the model built in code (num_heads divides).")
    intermediate_size: int = Field(512, gt=0, description="SwiGLU MLP width of the model built in code.")

    @model_validator(mode="after")
    def _heads_divide(self) -> SFTPhase:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError("hidden_size must divide by num_heads, and num_heads by num_kv_heads")
        return self

    def model_shape(self, seed: int) -> dict[str, int]:
        """The ``[model]`` table of the SFT run: the shape built from ``seed`` (the Llama family vLLM serves,
        :class:`trainer_adapter.model.tiny.ModelConfig`)."""
        return {"seed": seed, "num_layers": self.num_layers, "hidden_size": self.hidden_size,
                "num_heads": self.num_heads, "num_kv_heads": self.num_kv_heads,
                "intermediate_size": self.intermediate_size}


class RLPhase(BaseModel):
    """Asynchronous RL from the SFT weights (``vf-train rl``)."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(50, gt=0, description="RL trainer steps.")
    lr: float = Field(2e-4, gt=0, description="RL learning rate (constant after the warm-up).")
    warmup_steps: int = Field(10, ge=0, description="RL steps of linear learning-rate warm-up.")
    batch_size: int = Field(512, gt=0, description="Rollouts per RL step (a multiple of rollouts_per_example).")
    rollouts_per_example: int = Field(8, gt=1, description="Rollouts per problem: the advantage baseline's group.")
    max_async_level: int = Field(1, ge=0, description="Batch n may come from weights as old as n − this.")
    max_off_policy_steps: int = Field(
        1, ge=0, description="Rollouts from weights further behind the trained ones are dropped (and counted).")
    continuous_batching: bool = Field(
        True, description="Keep groups generating across weight updates (false with max_async_level 0: synchronous).")
    advantage_std_normalize: bool = Field(False, description="Divide each group's advantages by its reward std.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of the training rollouts.")
    eval_every: int = Field(
        0, ge=0, description="Online greedy held-out evaluation every this many RL steps (0: off; plotted too)."
    )
    num_processes: int = Field(1, gt=0, description="RL trainer ranks.")
    lora: LoraSettings = Field(default_factory=LoraSettings, description="LoRA adapters instead of full RL "
                               "training (merged into the weights each server loads).")

    @model_validator(mode="after")
    def _whole_groups(self) -> RLPhase:
        if self.batch_size % self.rollouts_per_example:
            raise ValueError("batch_size must be a multiple of rollouts_per_example (batches take whole groups)")
        return self


class SFTBaseline(BaseModel):
    """The skeptic's comparison for the RL gain: SFT on the training rows' reference answers, from the weights RL
    started from, with the RL run's compute (as many optimizer steps, as many positions run forward and
    backward), measured on the same held-out rows the same way."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="Run the equal-compute SFT-only baseline after RL and report it.")
    lr: float = Field(3e-5, gt=0, description="Its learning rate (constant, no warm-up, as RL's).")


class EvalPhase(BaseModel):
    """The held-out measurement before and after RL (``vf-eval`` through a fresh vLLM server)."""

    model_config = ConfigDict(extra="forbid")

    num_examples: int = Field(200, gt=0, description="Held-out rows (the environment's eval split).")
    rollouts_per_example: int = Field(8, gt=0, description="Rollouts per held-out row.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature (0: greedy).")
    greedy: bool = Field(True, description="Also measure greedy accuracy (one reply per row at temperature 0).")


class ServerSettings(BaseModel):
    """The job's one vLLM server (BEFORE, RL and AFTER): the engine settings that differ between CPU and GPU."""

    model_config = ConfigDict(extra="forbid")

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "float32", description="Served dtype: float32 on CPU (logprobs equal to the fp32 trainer's), bfloat16 on a "
        "GPU (what the trainer computes in there).")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="GPU only: vLLM's share of the GPU's memory; the trainer ranks on the same GPU "
        "get the rest (vLLM's own default, 0.9, would leave them none). Unset on CPU.")
    max_num_seqs: int = Field(512, gt=0, description="Sequences the server decodes at once (a whole RL batch).")


class MainJobConfig(BaseModel):
    """The main job: SFT warm start, held-out eval, RL, held-out eval, reward curve."""

    model_config = ConfigDict(extra="forbid")

    output_dir: Path = Field(Path("outputs/main_job"), description="Where every phase writes; emptied first.")
    seed: int = Field(0, description="Seeds the model's initial weights, the SFT data order and the RL problems.")
    model: str = Field(TINY, min_length=1, description="The model trained: a catalog model (vf-train model list), "
                       "which the job prepares, or 'tiny', the 4-layer model built in code (sft.* is its shape).")
    env_id: str = Field("arithmetic", min_length=1, description="The environment trained and measured.")
    env_args: dict[str, Any] = Field(
        default_factory=dict, description="More arguments of the environment (num_train_examples and "
        "num_eval_examples come from their own keys).")
    num_train_examples: int = Field(5000, gt=0, description="Training rows of the environment.")
    max_tokens: int = Field(8, gt=0, description="Longest reply in tokens (a sum is at most 3 bytes + end of turn).")
    vllm_python: Path = Field(Path(".venv-vllm/bin/python"), description="Interpreter with vLLM (setup_vllm_cpu.sh).")
    server_timeout_s: float = Field(600.0, gt=0, description="Give up on a vLLM server not ready after this.")
    precision: Precision = Field("auto", description=f"SFT and RL trainers. {PRECISION_HELP}")
    server: ServerSettings = Field(default_factory=ServerSettings, description="The job's vLLM server.")
    sft: SFTPhase = Field(default_factory=SFTPhase, description="The SFT warm start.")
    rl: RLPhase = Field(default_factory=RLPhase, description="The RL run.")
    eval: EvalPhase = Field(default_factory=EvalPhase, description="The held-out evaluation.")
    sft_baseline: SFTBaseline = Field(default_factory=SFTBaseline, description="The equal-compute SFT-only "
                                      "baseline.")

    @field_validator("model")
    @classmethod
    def _known_model(cls, name: str) -> str:
        from trainer_adapter.model.catalog import CATALOG

        if name != TINY and name not in CATALOG:
            raise ValueError(f"no model {name!r} in the catalog (known: {', '.join([TINY, *sorted(CATALOG)])})")
        return name

    @model_validator(mode="after")
    def _tiny_needs_sft(self) -> MainJobConfig:
        if self.model == TINY and not self.sft.enabled:
            raise ValueError("the tiny model starts from random weights: it needs sft.enabled")
        reserved = {"num_train_examples", "num_eval_examples"} & set(self.env_args)
        if reserved:
            raise ValueError(f"env_args may not set {sorted(reserved)}: use num_train_examples and "
                             "eval.num_examples")
        return self

    def all_env_args(self) -> dict[str, Any]:
        """The environment's arguments: ``env_args`` with the training and held-out row counts."""
        return {**self.env_args, "num_train_examples": self.num_train_examples,
                "num_eval_examples": self.eval.num_examples}


__all__ = ["TINY", "EvalPhase", "MainJobConfig", "RLPhase", "SFTBaseline", "SFTPhase", "ServerSettings"]
