"""Named model servers: the :class:`Endpoint` record and the OpenAI-compatible providers ``-p`` knows.

A module of its own, below both ``verifiers.eval.config`` (which validates ``-p``) and
``verifiers.eval.endpoints`` (which resolves it with a registry), so neither imports the other late.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """One served model: its id at the server, the server's base URL, the variable holding the key."""

    model: str | None
    url: str
    key: str


# OpenAI-compatible providers; ``model`` is None because a provider serves many models.
PROVIDERS: dict[str, Endpoint] = {
    "openai": Endpoint(None, "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": Endpoint(None, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together": Endpoint(None, "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "deepseek": Endpoint(None, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "fireworks": Endpoint(None, "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "groq": Endpoint(None, "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "prime": Endpoint(None, "https://api.pinference.ai/api/v1", "PRIME_API_KEY"),
    # a vLLM (or any) server on this machine; without the variable set, a local server gets a dummy key
    "local": Endpoint(None, "http://localhost:8000/v1", "VLLM_API_KEY"),
    "vllm": Endpoint(None, "http://localhost:8000/v1", "VLLM_API_KEY"),
}


__all__ = ["PROVIDERS", "Endpoint"]
