"""The results.jsonl record: its own keys, and State keys added with ``state_columns``."""

from __future__ import annotations

import logging

import pytest

from verifiers.eval.outputs import OUTPUT_KEYS, state_to_output
from verifiers.state import State


def test_output_keys_are_exactly_the_records_own_keys() -> None:
    assert set(state_to_output(State.new(prompt=[]))) == OUTPUT_KEYS


def test_state_columns_are_json_safe_missing_is_null_and_an_object_is_its_repr(
        caplog: pytest.LogCaptureFixture) -> None:
    state = State.new(prompt=[])
    state["turn"], state["odd"], state["nan"] = 2, object(), float("nan")
    with caplog.at_level(logging.WARNING, logger="verifiers.eval"):
        output = state_to_output(state, state_columns=["turn", "absent", "odd", "nan"])
    assert output["turn"] == 2 and output["absent"] is None
    assert output["odd"].startswith("<object object at") and output["nan"] == "nan"  # NaN is not JSON either
    assert "state column 'odd' holds a value of type object" in caplog.text
