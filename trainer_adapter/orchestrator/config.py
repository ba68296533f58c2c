"""The orchestrator's config (``[orchestrator]`` of a run): scheduling, batch shape, staleness, sampling, and its
parts' sections (the difficulty buffer, validation, metrics)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.orchestrator.buffer import BufferConfig
from trainer_adapter.orchestrator.validation import ValidationConfig
from verifiers.metrics_server import MetricsConfig


class OrchestratorConfig(BaseModel):
    """Rollout scheduling, batch shape, staleness bounds and sampling."""

    model_config = ConfigDict(extra="forbid")

    model_name: str = Field("tiny", description="Model name sent to the inference servers.")
    batch_size: int = Field(64, gt=0, description="Rollouts per trainer step.")
    rollouts_per_example: int = Field(8, gt=1, description="Rollouts per group (the advantage baseline's size).")
    max_inflight_groups: int = Field(16, gt=0, description="Groups generating at once, over all servers.")
    max_async_level: int = Field(2, ge=0, description="Batch n may come from weights as old as n − this.")
    max_off_policy_steps: int = Field(8, ge=0, description="Rollouts further behind the trained weights are dropped.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (the trainer divides logits by it).")
    max_tokens: int = Field(64, gt=0, description="Longest completion per model turn, in tokens.")
    seq_len: int = Field(2048, gt=0, description="Positions per micro-batch (a shared prompt counted once).")
    num_train_ranks: int = Field(1, gt=0, description="Trainer ranks the micro-batches are dealt to.")
    weights_poll_s: float = Field(0.1, gt=0, description="How often to look for new weights.")
    weights_timeout_s: float = Field(600.0, gt=0, description="Give up waiting for a weights version after this.")
    seed: int = Field(0, description="Seeds which problems are asked.")
    eval_every: int = Field(
        0, ge=0, description="Evaluate on the env's eval split every this many steps and at the end (0: never)."
    )
    eval_examples: int = Field(100, gt=0, description="Eval rows per evaluation.")
    eval_rollouts_per_example: int = Field(
        1, gt=0, description="Replies per eval row; their mean reward is the row's (with eval_temperature > 0: the "
        "expected reward RL optimises, not only greedy accuracy).",
    )
    eval_temperature: float = Field(
        0.0, ge=0, description="Sampling temperature of the evaluation (0: greedy; the training temperature "
        "measures what RL optimises).",
    )
    buffer: BufferConfig = Field(default_factory=BufferConfig, description="Difficulty pools and filters.")
    advantage_std_normalize: bool = Field(
        False, description="Divide each group's advantages (reward − group mean) by the group's reward std + 1e-6 "
        "(population std, GRPO-style); false: mean-centred only.",
    )
    continuous_batching: bool = Field(
        True, description="Keep max_inflight_groups groups generating across steps and weight updates; false (with "
        "max_async_level = 0): the synchronous baseline, each step generates just its batch and waits for it.",
    )
    max_fruitless_groups: int = Field(
        256, gt=0, description="Stop with an error after this many groups in a row gave the batch nothing (equal "
        "rewards, filtered, failed): the batch could otherwise never fill.",
    )
    coalesce_requests: bool = Field(
        True, description="Send a group's identical model calls (its rollouts' shared first turn) as one request with "
        "n replies (verifiers.CoalescingClient): the server pays its per-request cost and the prefill once, 3.6x "
        "faster for the tiny model on CPU. false: one request per rollout (a server that ignores n).",
    )
    validation: ValidationConfig = Field(
        default_factory=ValidationConfig, description="Check each group against its inference server's commitments "
        "before it trains (servers the trainer does not trust; docs/validation.md).",
    )
    metrics: MetricsConfig = Field(
        default_factory=MetricsConfig, description="The orchestrator process's Prometheus endpoint (with the "
        "metrics of the sandboxes it runs); off unless metrics.port is set.",
    )


__all__ = ["OrchestratorConfig"]
