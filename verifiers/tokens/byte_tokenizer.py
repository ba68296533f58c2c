"""A byte-level tokenizer with chat templates: the tiny model's vocabulary, and real token ids for tests.

``trainer_adapter/model/tokenizer.py`` builds the Hugging Face twin of it that vLLM and the trainer load;
the scripted server (``verifiers.testing``) tokenizes with this one, so every part sees the same ids.

Token id = byte value (0-255); a few special tokens follow from id 256. It
mirrors the part of a Hugging Face tokenizer that training code uses
(``encode``, ``decode``, ``apply_chat_template``, ``eos_token_id``), so tests of
token alignment run without downloading a model::

    tok = ByteTokenizer()                       # CHATML; ByteTokenizer(QWEN3_STYLE) rewrites history
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    tok.decode(ids)   # '<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import Template
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from verifiers.tokens.chat_templates import CHATML, TEMPLATES

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
)
"""Special tokens, with ids 256, 257, ... in this order."""

_SPECIAL_IDS: dict[str, int] = {tok: 256 + i for i, tok in enumerate(SPECIAL_TOKENS)}
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")


def _tojson(value: Any, indent: int | None = None, sort_keys: bool = False, separators: Any = None) -> str:
    # Like HF's filter: plain JSON (no HTML escaping, unicode kept), unlike Jinja's built-in.
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys, separators=separators)


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


@lru_cache(maxsize=16)
def _compile(source: str) -> Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    return env.from_string(source)


class ByteTokenizer:
    """Bytes as tokens, plus ChatML special tokens; see the module docstring.

    ``chat_template`` is a Jinja source or a short name (``"chatml"``, ``"qwen3"``).
    """

    eos_token = "<|im_end|>"
    pad_token = "<|endoftext|>"
    bos_token: str | None = None

    def __init__(self, chat_template: str = CHATML) -> None:
        self.chat_template = TEMPLATES.get(chat_template, chat_template)
        self._template = _compile(self.chat_template)

    # -- vocabulary -----------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return 256 + len(SPECIAL_TOKENS)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def eos_token_id(self) -> int:
        return _SPECIAL_IDS[self.eos_token]

    @property
    def pad_token_id(self) -> int:
        return _SPECIAL_IDS[self.pad_token]

    @property
    def all_special_ids(self) -> list[int]:
        return list(_SPECIAL_IDS.values())

    def convert_tokens_to_ids(self, token: str) -> int:
        """Id of a special token or of a one-byte token."""
        if token in _SPECIAL_IDS:
            return _SPECIAL_IDS[token]
        data = token.encode("latin-1") if len(token) == 1 else b""
        if len(data) != 1:
            raise ValueError(f"{token!r} is not a token of the byte tokenizer")
        return data[0]

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Token strings: a special token's text, else the byte as one latin-1 character."""
        if isinstance(ids, int):
            return self._piece(ids)
        return [self._piece(i) for i in ids]

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for (a special token's UTF-8 text)."""
        self._check_id(token_id)
        return bytes([token_id]) if token_id < 256 else SPECIAL_TOKENS[token_id - 256].encode()

    def _piece(self, token_id: int) -> str:
        self._check_id(token_id)
        return chr(token_id) if token_id < 256 else SPECIAL_TOKENS[token_id - 256]

    def _check_id(self, token_id: int) -> None:
        if not isinstance(token_id, int) or not 0 <= token_id < self.vocab_size:
            raise ValueError(f"token id {token_id!r} is outside the vocabulary [0, {self.vocab_size})")

    # -- text <-> ids ---------------------------------------------------------------

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """UTF-8 bytes of ``text``; special-token strings in it become their ids (as HF does).

        ``add_special_tokens`` is accepted for HF compatibility; there is no BOS to add.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, got {type(text).__name__}")
        if "<" not in text:
            return list(text.encode())
        ids: list[int] = []
        for i, chunk in enumerate(_SPECIAL_RE.split(text)):
            if i % 2:
                ids.append(_SPECIAL_IDS[chunk])
            elif chunk:
                ids.extend(chunk.encode())
        return ids

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; byte runs that are not valid UTF-8 decode to U+FFFD."""
        parts: list[str] = []
        run = bytearray()
        for token_id in ids:
            self._check_id(token_id)
            if token_id < 256:
                run.append(token_id)
                continue
            parts.append(run.decode(errors="replace"))
            run.clear()
            if not skip_special_tokens:
                parts.append(SPECIAL_TOKENS[token_id - 256])
        parts.append(run.decode(errors="replace"))
        return "".join(parts)

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        """HF-style call: ``{"input_ids": ..., "attention_mask": ...}`` for one text."""
        ids = self.encode(text)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)}

    # -- chat -----------------------------------------------------------------------

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        chat_template: str | None = None,
        **template_kwargs: Any,
    ) -> list[int] | str:
        """Render ``conversation`` with the chat template, as HF tokenizers do.

        Returns token ids when ``tokenize`` is true, the rendered text otherwise.
        Extra keyword arguments (e.g. ``enable_thinking=False``) reach the template.
        """
        if isinstance(conversation, (str, bytes)) or not isinstance(conversation, Sequence):
            raise TypeError("apply_chat_template() takes a list of message dicts")
        if not all(isinstance(m, Mapping) for m in conversation):
            raise TypeError("every message must be a mapping with 'role' and 'content'")
        template = self._template if chat_template is None else _compile(TEMPLATES.get(chat_template, chat_template))
        text = template.render(
            messages=list(conversation),
            tools=list(tools) if tools else None,
            add_generation_prompt=add_generation_prompt,
            bos_token="",
            eos_token=self.eos_token,
            **template_kwargs,
        )
        return self.encode(text) if tokenize else text

    @staticmethod
    def assistant_text(content: str | None, tool_calls: Sequence[Mapping[str, Any]] | None = None) -> str:
        """What the built-in templates render for the newest assistant turn (between its header and ``<|im_end|>``).

        The scripted server uses it as the text the "model" generated, so the ids it
        returns are exactly the ones the next turn's prompt contains.
        """
        parts = [content or ""]
        for call in tool_calls or ():
            fn = call.get("function", call)
            args = fn.get("arguments", "")
            args_text = args if isinstance(args, str) else _tojson(args)
            name = _tojson(fn.get("name", ""))
            parts.append(f'<tool_call>\n{{"name": {name}, "arguments": {args_text}}}\n</tool_call>')
        return "".join(parts)


__all__ = ["ByteTokenizer", "SPECIAL_TOKENS"]
