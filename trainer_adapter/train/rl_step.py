"""One RL optimizer step's forward/backward work on this rank: the configured policy loss over its micro-batches.

The orchestrator packs a step's samples and deals the micro-batches to the ranks
(:func:`trainer_adapter.orchestrator.packing.distribute`); every rank then runs its share
here. The loss of every micro-batch is divided by the step's count over all ranks (its
trainable tokens, or with ``normalization = "sequence"`` its samples that have one, see
:func:`step_normalizer`), divided by the rank count because FSDP averages gradients across
ranks, so the step's gradient is that of one loss over the whole batch. There is one optimizer
step per batch, so the only importance ratio is trainer against inference. With ``kl_coef > 0``
the frozen reference model's logprobs come from the same forward path, without a graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from trainer_adapter.loss.config import LossConfig
from trainer_adapter.loss.policy import policy_loss
from trainer_adapter.orchestrator.packing import MicroBatch
from trainer_adapter.train.distributed import World, all_reduce_sum
from trainer_adapter.train.forward import (
    MicroBatchTensors,
    sync_gradients_after,
    token_logprobs,
    trainable_samples,
    trainable_tokens,
)


def step_normalizer(micro_batches: Sequence[MicroBatch], config: LossConfig, world: World) -> int:
    """What the step's loss is divided by, over all ranks (a collective): trainable tokens, or samples with one."""
    local = trainable_tokens(micro_batches) if config.normalization == "token" else trainable_samples(micro_batches)
    return int(all_reduce_sum(local, world))


def rl_backward(
    model: PreTrainedModel,
    micro_batches: Sequence[MicroBatch],
    step_count: int,
    config: LossConfig,
    world: World,
    reference: PreTrainedModel | None = None,
) -> dict[str, float]:
    """Accumulate the gradient of the step's loss over this rank's ``micro_batches``.

    ``step_count`` is :func:`step_normalizer` of the whole step (every rank's share);
    ``reference`` the frozen model of the KL penalty (needed when ``config.kl_coef > 0``).
    Returns the loss and the loss metrics, averaged over all ranks' trainable tokens
    (a collective: every rank must call it, with as many micro-batches).
    """
    normalizer = max(step_count, 1) / world.world_size
    n = len(_METRICS)
    sums = torch.zeros(2 * n + 2, dtype=torch.float64)  # metric·tokens..., calls reporting it..., loss, tokens
    for i, mb in enumerate(micro_batches):
        sync_gradients_after(model, last=i == len(micro_batches) - 1)
        batch = MicroBatchTensors.from_micro_batch(mb, world.device)
        reference_logprobs = None
        if reference is not None:  # first, so its activations are gone before the policy's graph is built
            with torch.no_grad():
                reference_logprobs, _ = token_logprobs(reference, batch)
        logprobs, entropy = token_logprobs(model, batch, with_entropy=True)
        out = policy_loss(logprobs, batch.inference_logprobs, batch.advantages, batch.loss_mask, batch.sample_ids,
                          config, normalizer=normalizer, entropy=entropy, reference_logprobs=reference_logprobs)
        out.loss.backward()
        for j, name in enumerate(_METRICS):
            if name in out.metrics:
                sums[j] += out.metrics[name] * out.trainable_tokens
                sums[n + j] += 1
        sums[-2] += out.loss.item()
        sums[-1] += out.trainable_tokens
    if torch.distributed.is_initialized():
        reduced = sums.to(world.device)
        torch.distributed.all_reduce(reduced)
        sums = reduced.cpu()
    tokens = max(float(sums[-1]), 1.0)
    # Only the metrics the variant reports (e.g. no ``clipped`` for icepop, no ``ref_kl`` without a reference).
    metrics = {name: float(sums[j]) / tokens for j, name in enumerate(_METRICS) if sums[n + j] > 0}
    metrics["loss"] = float(sums[-2]) / world.world_size
    metrics["trainable_tokens"] = float(sums[-1])
    return metrics


_METRICS = ("mismatch_kl", "masked_low", "masked_high", "masked_sequence", "masked", "clipped", "entropy", "ref_kl")


__all__ = ["rl_backward", "step_normalizer"]
