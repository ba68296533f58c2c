"""Check a model folder's chat template for what the trainer's masks rely on, before anything starts.

The trainer finds a model turn in a rendered conversation by two facts of the template: the generation prompt
(``add_generation_prompt=True``) is a prefix of the conversation with the reply, and the reply ends with the
tokenizer's end-of-sequence token, where a turn's trainable tokens stop (``train/sft_data.py``,
``verifiers.tokens``). A template without either would train on the wrong tokens silently; this check makes it
one line and exit status 2 at ``vf-train sft``/``rl``/``serve`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from trainer_adapter.errors import TrainerConfigError

_CONVERSATION = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]


def check_chat_template(folder: Path) -> None:
    """Raise :class:`TrainerConfigError` unless ``folder``'s tokenizer has a template the masks can use."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    check_tokenizer_template(tokenizer, str(folder))


def check_tokenizer_template(tokenizer: Any, where: str) -> None:
    """:func:`check_chat_template` on a loaded tokenizer; ``where`` names it in the message."""
    if not getattr(tokenizer, "chat_template", None):
        raise TrainerConfigError(f"the tokenizer of {where} has no chat template")
    eos = tokenizer.eos_token_id
    if eos is None:
        raise TrainerConfigError(f"the tokenizer of {where} has no end-of-sequence token: a model turn has no end")
    try:
        prompt = _ids(tokenizer.apply_chat_template(_CONVERSATION[:1], add_generation_prompt=True, tokenize=True))
        full = _ids(tokenizer.apply_chat_template(_CONVERSATION, add_generation_prompt=False, tokenize=True))
    except (TemplateError, ValueError, TypeError) as e:  # what jinja and transformers raise for a bad template
        raise TrainerConfigError(f"the chat template of {where} does not render a conversation: {e}") from e
    if full[: len(prompt)] != prompt:
        raise TrainerConfigError(f"the chat template of {where} does not render the generation prompt as a prefix "
                                 "of the conversation with the reply: a model turn cannot be found in it")
    if eos not in full[len(prompt):]:
        raise TrainerConfigError(f"the chat template of {where} does not end an assistant turn with the "
                                 f"end-of-sequence token {tokenizer.eos_token!r}: a model turn's trained tokens "
                                 "would run on past its end")


def _ids(encoded: Any) -> list[int]:
    if isinstance(encoded, Mapping) or hasattr(encoded, "keys"):
        encoded = encoded["input_ids"]
    return [int(i) for i in encoded]


__all__ = ["check_chat_template", "check_tokenizer_template"]
