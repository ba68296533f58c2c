"""Test doubles with real interfaces: a scripted OpenAI-compatible server and a byte-level tokenizer.

>>> from verifiers.testing import ScriptedServer
>>> with ScriptedServer(policy="reverse").running() as base_url:  # doctest: +SKIP
...     ...  # point any OpenAI client at base_url
"""

from verifiers.testing import policies
from verifiers.testing.policies import Policy, Reply, ScriptedRequest, resolve_policy
from verifiers.testing.scripted_server import ScriptedServer
from verifiers.tokens.byte_tokenizer import SPECIAL_TOKENS, ByteTokenizer
from verifiers.tokens.chat_templates import CHATML, QWEN3_STYLE

__all__ = [
    "CHATML",
    "QWEN3_STYLE",
    "SPECIAL_TOKENS",
    "ByteTokenizer",
    "Policy",
    "Reply",
    "ScriptedRequest",
    "ScriptedServer",
    "policies",
    "resolve_policy",
]
