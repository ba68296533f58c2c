"""Greedy replies of a model folder to chat prompts, in-process (no inference server).

For quick checks of a trained folder (tests, the SFT warm start): the real evaluation
path is ``vf-eval`` against the inference server, which this does not replace.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


@torch.no_grad()
def greedy_replies(
    model_dir: Path,
    prompts: Sequence[list[dict[str, Any]]],
    max_new_tokens: int = 16,
    batch_size: int = 64,
    device: str = "cpu",
) -> list[str]:
    """The model's greedy reply (up to its end-of-turn token) to each chat prompt, computed in float32 on ``device``."""
    # transformers wraps Module.to with functools.wraps, whose typing keeps the unbound method's first parameter
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()  # type: ignore[arg-type]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    replies: list[str] = []
    for start in range(0, len(prompts), batch_size):
        texts = [
            tokenizer.apply_chat_template(list(p), add_generation_prompt=True, tokenize=False)
            for p in prompts[start : start + batch_size]
        ]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        out = model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        new = out[:, batch["input_ids"].shape[1] :]
        replies.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    return replies


def exact_match_rate(
    model_dir: Path, prompts: Sequence[list[dict[str, Any]]], answers: Sequence[str], device: str = "cpu"
) -> float:
    """Share of prompts whose greedy reply, stripped, equals the answer."""
    replies = greedy_replies(model_dir, prompts, device=device)
    return sum(r.strip() == a for r, a in zip(replies, answers)) / max(len(answers), 1)


__all__ = ["exact_match_rate", "greedy_replies"]
