"""Data helpers: answer extraction, prompts, and example datasets shipped with the package."""

from verifiers.data.answers import (
    BOXED_SYSTEM_PROMPT,
    THINK_BOXED_SYSTEM_PROMPT,
    extract_boxed_answer,
    extract_hash_answer,
)
from verifiers.data.examples import example_dataset_names, load_example_dataset

__all__ = [
    "BOXED_SYSTEM_PROMPT",
    "THINK_BOXED_SYSTEM_PROMPT",
    "example_dataset_names",
    "extract_boxed_answer",
    "extract_hash_answer",
    "load_example_dataset",
]
