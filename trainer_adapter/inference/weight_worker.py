"""The vLLM worker extension that swaps weights in the running engine (``--worker-extension-cls``).

vLLM mixes this class into each of its workers; the API server reaches its methods with
``engine_client.collective_rpc(name, args=...)``. The engine core runs such a call between two model
steps, so requests in flight are not drained: they go on with the new weights from their next token
(their KV cache, computed with the old weights, is kept).

Loading goes through vLLM's own in-place reload (``Worker.reload_weights``): it puts every layer back into
checkpoint layout, feeds the tensors through the model's ``load_weights`` (which fuses q/k/v into
``qkv_proj`` and gate/up into ``gate_up_proj``), then runs each layer's post-load processing again.

**The fix this module exists for.** On CPU, post-load processing repacks every linear weight into a
oneDNN (or sgl-kernel) layout and keeps the packed copy inside a closure, ``layer.cpu_linear``. The output
head of a tied model is such a layer, and its weight *is* the embedding's. vLLM's reload processes a layer
only when weights were loaded for it; the checkpoint has no ``lm_head.weight`` (the loader skips it and
re-ties), so the head is never processed again: the shared tensor gets the new values, but logits keep
coming from the packed copy of the old embedding. Outputs change (the input embedding and every other
layer are new) yet differ from a fresh load; reloading the same weights matches because the stale copy
is then right. :func:`repack_shared_weights` rebuilds the packed copies of every layer whose weight is
shared with another layer after each load. On GPUs the same step is a no-op (no packing there).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_adapter.inference.commitment_worker import CommitmentWorker
from trainer_adapter.inference.errors import WeightUpdateError
from trainer_adapter.inference.weights_folder import iter_tensors

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch


def repack_shared_weights(model: torch.nn.Module) -> list[str]:
    """Re-run post-load processing for unquantized embedding-style layers that share their weight tensor.

    Only :class:`UnquantizedEmbeddingMethod` layers are touched: their processing keeps ``weight`` intact
    and only derives a packed copy from it, so running it again is safe. Returns the layers' names.
    """
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    sharers: dict[int, list[tuple[str, torch.nn.Module, UnquantizedEmbeddingMethod]]] = defaultdict(list)
    for name, module in model.named_modules():
        weight = module._parameters.get("weight")
        if weight is None or weight.dim() != 2 or weight.numel() == 0:
            continue
        method = getattr(module, "quant_method", None)
        if isinstance(method, UnquantizedEmbeddingMethod):
            sharers[id(weight)].append((name, module, method))
    repacked: list[str] = []
    for group in sharers.values():
        if len(group) < 2:
            continue
        for name, module, method in group:
            method.process_weights_after_loading(module)
            repacked.append(name)
    return repacked


class WeightUpdateWorker(CommitmentWorker):
    """Methods vLLM adds to its worker; called through ``collective_rpc``, one call at a time (the commitment's too)."""

    # The folder loaded last; None: the weights the server was started with.
    _served_weights_dir: str | None = None
    # The model the server was started with, as the API server knows it (set by load_base_weights).
    _base_model: str | None = None

    if TYPE_CHECKING:  # supplied by vLLM's Worker, which this class is mixed into (vLLM is in .venv-vllm only)
        vllm_config: Any
        model_runner: Any
        reload_weights: Callable[..., None]

    def load_weights_from_dir(self, weight_dir: str) -> dict[str, Any]:
        """Load the safetensors folder ``weight_dir`` in place (its names and shapes were checked by the caller).

        Raises :class:`WeightUpdateError` if loading fails; the weights served before are loaded again first.
        """
        start = time.perf_counter()
        repacked = self._swap_weights(weight_dir)
        self._served_weights_dir = weight_dir
        return {"weight_dir": weight_dir, "seconds": time.perf_counter() - start, "repacked": repacked}

    def load_base_weights(self, base_model: str) -> dict[str, Any]:
        """Load the weights the server was started with, ``base_model`` (vLLM's own loader reads it again).

        The API server passes the path it was started with: vLLM's stock ``reload_weights`` RPC with a
        ``weights_path`` repoints this worker's config, so the worker's own idea of "base" may be stale.
        """
        start = time.perf_counter()
        self._base_model = base_model
        repacked = self._swap_weights(None)
        self._served_weights_dir = None
        return {"weight_dir": None, "seconds": time.perf_counter() - start, "repacked": repacked}

    def _swap_weights(self, weight_dir: str | None) -> list[str]:
        try:
            return self._swap_weights_once(weight_dir)
        except Exception as exc:  # re-raised below; the engine must not keep half-loaded layers
            previous = self._served_weights_dir
            try:
                self._swap_weights_once(previous)
            except Exception as restore_exc:
                raise WeightUpdateError(
                    f"loading {weight_dir or 'the base weights'} failed ({exc!r}), and so did restoring "
                    f"{previous or 'the base weights'} ({restore_exc!r}); restart the server"
                ) from exc
            raise WeightUpdateError(
                f"loading {weight_dir or 'the base weights'} failed ({exc!r}); "
                f"{previous or 'the base weights'} loaded again"
            ) from exc

    def _swap_weights_once(self, weight_dir: str | None) -> list[str]:
        if weight_dir is not None:
            self.reload_weights(weights_iterator=iter_tensors(Path(weight_dir)), is_checkpoint_format=True)
        else:
            # vLLM's loader reads the configured model path; repoint it only if something else moved it
            # (repointing drops a pinned hub revision, so leave an untouched config alone).
            configured = self.vllm_config.model_config.model
            path = None if self._base_model in (None, configured) else self._base_model
            self.reload_weights(weights_path=path, is_checkpoint_format=True)
        return repack_shared_weights(self.model_runner.get_model())


__all__ = ["WeightUpdateWorker", "repack_shared_weights"]
