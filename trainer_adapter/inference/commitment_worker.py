"""The commitment to a rollout's final hidden states, computed on the vLLM worker (``--worker-extension-cls``).

**Why a prefill after generation, not a capture during it.** vLLM 0.32 has no supported way to hand a
request's final hidden states back while generating: the only hidden-state export is the
``extract_hidden_states`` speculative method, which writes intermediate layers through a KV connector on GPU
runners, and a forward hook on the final norm would see a flattened batch of many requests, chunked
prefills and prefix-cache skips whose mapping back to one request is the runner's private state. So the
commitment is computed after generation, on the worker, with the weights the server is serving right then:
:meth:`CommitmentWorker.commit_tokens` runs one prefill of prompt + completion through the served model's
own layers (vLLM's fused q/k/v and gate/up projections, rotary embedding, RMSNorm, MLP kernels), with exact
causal attention (``scaled_dot_product_attention``) in place of the paged-attention kernel, which needs the
engine's KV cache and forward context. The worker calls it between two engine steps, like a weight load.

What this means for trust is in docs/validation.md: a commitment made this way binds the tokens to the
weights the worker serves, not to the sampling that produced them (the sampling check covers that).
Llama-style decoders (the trainer's model family) only; another architecture is refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer_adapter.inference.errors import InferenceError

if TYPE_CHECKING:
    import torch


class CommitmentError(InferenceError):
    """The served model cannot compute a commitment (not a Llama-style decoder)."""


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn: Any) -> torch.Tensor:
    """Exact causal attention over one sequence: ``[T, heads * head_dim]`` in, the same shape out."""
    import torch.nn.functional as F

    length = q.shape[0]
    q = q.view(length, attn.num_heads, attn.head_dim).transpose(0, 1)
    k = k.view(length, attn.num_kv_heads, attn.head_dim).transpose(0, 1)
    v = v.view(length, attn.num_kv_heads, attn.head_dim).transpose(0, 1)
    groups = attn.num_heads // attn.num_kv_heads
    k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=attn.scaling)
    return out.transpose(0, 1).reshape(length, attn.num_heads * attn.head_dim)


def final_hidden_states(model: Any, token_ids: list[int]) -> torch.Tensor:
    """The final hidden states (after the last norm) of ``token_ids`` through a vLLM Llama-style ``model``."""
    import torch

    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(inner, "norm"):
        raise CommitmentError(f"commitments need a Llama-style decoder; the served model is {type(model).__name__}")
    device = next(model.parameters()).device
    ids = torch.tensor(token_ids, dtype=torch.long, device=device)
    positions = torch.arange(len(token_ids), device=device)
    hidden = inner.embed_input_ids(ids)
    residual: torch.Tensor | None = None
    for layer in list(inner.layers)[inner.start_layer : inner.end_layer]:
        if residual is None:
            residual = hidden
            hidden = layer.input_layernorm(hidden)
        else:
            hidden, residual = layer.input_layernorm(hidden, residual)
        attn = layer.self_attn
        qkv, _ = attn.qkv_proj(hidden)
        q, k, v = qkv.split([attn.q_size, attn.kv_size, attn.kv_size], dim=-1)
        q, k = attn.rotary_emb(positions, q, k)
        hidden, _ = attn.o_proj(causal_attention(q, k, v, attn))
        hidden, residual = layer.post_attention_layernorm(hidden, residual)
        hidden = layer.mlp(hidden)
    hidden, _ = inner.norm(hidden, residual)
    return hidden


class CommitmentWorker:
    """Methods vLLM adds to its worker; called through ``collective_rpc`` between engine steps."""

    if TYPE_CHECKING:  # supplied by vLLM's Worker, which this class is mixed into
        model_runner: Any

    def commit_tokens(self, rollouts: list[dict[str, Any]], interval: int, k: int) -> list[dict[str, Any]]:
        """Commitments (as JSON objects) for each ``{"prompt_ids", "completion_ids"}`` in ``rollouts``."""
        import torch

        from trainer_adapter.validate.commitment import commit

        model = self.model_runner.get_model()
        out = []
        with torch.inference_mode():
            for rollout in rollouts:
                prompt, completion = rollout["prompt_ids"], rollout["completion_ids"]
                hidden = final_hidden_states(model, prompt + completion[:-1])[len(prompt) - 1 :]
                out.append(commit(hidden.float().cpu(), interval, k).model_dump())
        return out


__all__ = ["CommitmentError", "CommitmentWorker", "causal_attention", "final_hidden_states"]
