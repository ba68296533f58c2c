"""One RL optimizer step's forward/backward work on this rank: the IcePop loss over its micro-batches.

The orchestrator packs a step's samples and deals the micro-batches to the ranks
(:func:`trainer_adapter.orchestrator.packing.distribute`); every rank then runs its share
here. The loss of every micro-batch is divided by the step's trainable tokens over all
ranks, divided by the rank count because FSDP averages gradients across ranks, so the
step's gradient is that of one loss over all its tokens. There is one optimizer step per
batch, so the only importance ratio is trainer against inference.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from trainer_adapter.loss import LossConfig, icepop_loss
from trainer_adapter.orchestrator.packing import MicroBatch
from trainer_adapter.train.distributed import World
from trainer_adapter.train.forward import MicroBatchTensors, sync_gradients_after, token_logprobs


def rl_backward(
    model: PreTrainedModel,
    micro_batches: Sequence[MicroBatch],
    step_tokens: int,
    config: LossConfig,
    world: World,
) -> dict[str, float]:
    """Accumulate the gradient of the step's loss over this rank's ``micro_batches``.

    ``step_tokens`` is the trainable-token count of the whole step (every rank's share).
    Returns the loss and the loss metrics, averaged over all ranks' trainable tokens
    (a collective: every rank must call it, with as many micro-batches).
    """
    normalizer = max(step_tokens, 1) / world.world_size
    sums = torch.zeros(len(_METRICS) + 2, dtype=torch.float64)  # metrics·tokens..., loss, tokens
    for i, mb in enumerate(micro_batches):
        sync_gradients_after(model, last=i == len(micro_batches) - 1)
        batch = MicroBatchTensors.from_micro_batch(mb, world.device)
        logprobs, entropy = token_logprobs(model, batch, with_entropy=True)
        out = icepop_loss(logprobs, batch.inference_logprobs, batch.advantages, batch.loss_mask, batch.sample_ids,
                          config, normalizer=normalizer, entropy=entropy)
        out.loss.backward()
        for j, name in enumerate(_METRICS):
            sums[j] += out.metrics.get(name, 0.0) * out.trainable_tokens
        sums[-2] += out.loss.item()
        sums[-1] += out.trainable_tokens
    if torch.distributed.is_initialized():
        reduced = sums.to(world.device)
        torch.distributed.all_reduce(reduced)
        sums = reduced.cpu()
    tokens = max(float(sums[-1]), 1.0)
    metrics = {name: float(sums[j]) / tokens for j, name in enumerate(_METRICS)}
    metrics["loss"] = float(sums[-2]) / world.world_size
    metrics["trainable_tokens"] = float(sums[-1])
    return metrics


_METRICS = ("mismatch_kl", "masked_low", "masked_high", "masked_sequence", "masked", "entropy")


__all__ = ["rl_backward"]
