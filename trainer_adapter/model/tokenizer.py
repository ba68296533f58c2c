"""A Hugging Face byte-level tokenizer built in code, with the ids of ``verifiers.tokens.ByteTokenizer``.

Token id = byte value (0-255), then the ChatML special tokens from id 256 in the SDK's
order, and the SDK's ChatML chat template. Because it is a real ``PreTrainedTokenizerFast``
(a ``tokenizer.json`` in a folder), vLLM and ``AutoTokenizer`` load it like any other,
and its ids match the scripted server's, so every part of the project sees the same tokens.
"""

from __future__ import annotations

from functools import lru_cache

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from verifiers.tokens.byte_tokenizer import SPECIAL_TOKENS
from verifiers.tokens.chat_templates import CHATML

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
VOCAB_SIZE = 256 + len(SPECIAL_TOKENS)


@lru_cache(maxsize=1)
def byte_symbols() -> tuple[str, ...]:
    """The printable character standing for each byte (the usual byte-level BPE alphabet).

    Printable Latin-1 bytes stand for themselves; the others are shifted past 255 so no
    symbol is whitespace or a control character (which pre-tokenizers would split on).
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols: dict[int, str] = {b: chr(b) for b in printable}
    shift = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + shift)
            shift += 1
    return tuple(symbols[b] for b in range(256))


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The byte-level tokenizer: ids 0-255 are bytes, then the special tokens, ChatML template."""
    vocab = {symbol: b for b, symbol in enumerate(byte_symbols())}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        chat_template=CHATML,
        model_max_length=4096,
    )


__all__ = ["EOS_TOKEN", "PAD_TOKEN", "VOCAB_SIZE", "build_tokenizer", "byte_symbols"]
