"""The model the trainer starts from: a Hugging Face folder, or a tiny Llama built in code.

The tiny default (2 layers, 128 wide, 4 heads of 32 with 2 key/value heads, SwiGLU, tied
embeddings, the byte-level tokenizer) is what the offline main job trains: small enough
for a 2-core CPU, and an architecture vLLM serves. Llama rather than Qwen2 because
transformers pairs a Qwen2 config with its own tokenizer class, which normalises Unicode
and would change the byte ids.
"""

from __future__ import annotations

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from trainer_adapter.model.config import ModelConfig, check_model_folder
from trainer_adapter.model.lora import apply_lora
from trainer_adapter.model.tokenizer import VOCAB_SIZE, build_tokenizer


def tiny_config(config: ModelConfig) -> LlamaConfig:
    """The Hugging Face config of the tiny model."""
    tokenizer_ids = build_tokenizer()
    return LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        head_dim=config.hidden_size // config.num_heads,
        max_position_embeddings=config.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer_ids.eos_token_id,  # <|im_end|>, the end of a turn
        pad_token_id=tokenizer_ids.pad_token_id,
        dtype="float32",
    )


def parameter_count(config: ModelConfig) -> int:
    """Parameters of the model built from ``config``'s shape, counted from the shape alone (nothing is built).

    Per layer: q and o projections ``h·h`` each, k and v ``h·kv·d`` each, the SwiGLU MLP ``3·h·i``, two
    RMSNorms ``2·h``; then the embedding ``V·h`` (tied: the output head adds nothing) and the final norm.
    """
    h, head_dim = config.hidden_size, config.hidden_size // config.num_heads
    attention = 2 * h * h + 2 * h * config.num_kv_heads * head_dim
    layer = attention + 3 * h * config.intermediate_size + 2 * h
    return config.num_layers * layer + VOCAB_SIZE * h + h


def load_model(config: ModelConfig) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model (float32, training mode, SDPA attention; wrapped with adapters when ``config.lora.enabled``) and its
    tokenizer."""
    if config.path is not None:
        check_model_folder(config.path)
        model = AutoModelForCausalLM.from_pretrained(config.path, dtype=torch.float32, attn_implementation="sdpa")
        tokenizer = AutoTokenizer.from_pretrained(config.path)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            model = LlamaForCausalLM._from_config(tiny_config(config), attn_implementation="sdpa")
        tokenizer = build_tokenizer()
    if config.lora.enabled:
        model = apply_lora(model, config.lora)
    model.train()
    return model, tokenizer


__all__ = ["load_model", "parameter_count", "tiny_config"]
