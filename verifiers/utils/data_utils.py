"""Classic import path ``verifiers.utils.data_utils``; the helpers live in :mod:`verifiers.data`."""

from verifiers.data import (
    BOXED_SYSTEM_PROMPT,
    THINK_BOXED_SYSTEM_PROMPT,
    extract_boxed_answer,
    extract_hash_answer,
    load_example_dataset,
)

__all__ = [
    "BOXED_SYSTEM_PROMPT",
    "THINK_BOXED_SYSTEM_PROMPT",
    "extract_boxed_answer",
    "extract_hash_answer",
    "load_example_dataset",
]
