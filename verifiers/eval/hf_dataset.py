"""A run's results as a Hugging Face dataset on disk (``vf-eval --save-dataset DIR``).

One row per rollout, the columns of ``results.jsonl``; ``datasets.load_from_disk(DIR)``
reads it back. Arrow needs one type per column, which free-form data (``info``, a
state column) may not have across rollouts: such a column is stored as JSON text,
with a warning, rather than losing the run's dataset.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
from datasets import Dataset

logger = logging.getLogger("verifiers.eval")

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError)


def results_dataset(outputs: list[dict[str, Any]]) -> Dataset:
    """``outputs`` (the records of ``results.jsonl``) as a dataset; mixed-type columns become JSON text."""
    try:
        return Dataset.from_list(outputs)
    except _ARROW_ERRORS:
        pass
    columns = list(dict.fromkeys(key for output in outputs for key in output))
    as_text: list[str] = []
    for column in columns:
        try:
            Dataset.from_dict({column: [output.get(column) for output in outputs]})
        except _ARROW_ERRORS:
            as_text.append(column)
    logger.warning("--save-dataset: column(s) %s hold values of several types; saved as JSON text",
                   ", ".join(as_text))
    rows = [{**output, **{c: json.dumps(output.get(c), default=str) for c in as_text}} for output in outputs]
    return Dataset.from_list(rows)


def save_results_dataset(outputs: list[dict[str, Any]], path: Path) -> None:
    """Write ``outputs`` as a dataset to the folder ``path`` (``Dataset.save_to_disk``)."""
    results_dataset(outputs).save_to_disk(str(path))


__all__ = ["results_dataset", "save_results_dataset"]
