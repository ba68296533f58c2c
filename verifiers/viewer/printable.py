"""Text from run folders made safe to put on a terminal.

A results file is written by whoever ran the evaluation — and its strings by the model and the environment — so
the viewer treats every one as hostile: a model name holding ``ESC ] 0 ;`` retitles the pane, ``ESC [ 2 J``
wipes the screen, ``ESC ] 52`` writes the clipboard. Control characters (C0 but newline and tab, DEL, C1) and
the bidirectional overrides that reorder what a line appears to say are shown as visible escapes instead.

>>> printable("gpt\\x1b]0;pwned\\x07")
'gpt\\\\x1b]0;pwned\\\\x07'
>>> printable("two\\nlines\\ttabbed")
'two\\nlines\\ttabbed'
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character that would act on the terminal written as a visible escape."""
    return _UNSAFE.sub(_visible, text)


def as_text(value: Any, limit: int = 200) -> str:
    """Any value read from JSON as a short string, never raising: a string as it is, anything else as JSON, cut
    at ``limit`` characters. Reading a file is not the end of its tricks: ``str()`` of a 5000-digit integer
    raises (Python's limit on integer-to-text conversion), and a deeply nested list overflows the encoder."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, RecursionError) as error:
            return f"(a {type(value).__name__} that cannot be shown: {error})"[:limit]
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["as_text", "printable"]
