"""Logging setup and the console view of sample rollouts (both eras' call forms)."""

from __future__ import annotations

import logging

import pytest

import verifiers as vf
from verifiers.logs import LOGGER_NAME, print_prompt_completions_sample
from verifiers.utils import logging_utils

PROMPTS = [[{"role": "user", "content": "2+2? [bold]markup stays text[/bold]"}], "plain prompt"]
COMPLETIONS = [
    [{"role": "assistant", "content": "4", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2}"}}]}],
    "plain completion",
]


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # rich reads it: no wrapping inside the asserted texts


@pytest.fixture
def logger():
    logger = logging.getLogger(LOGGER_NAME)
    saved = (logger.level, list(logger.handlers))
    yield logger
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]


def test_classic_paths_reexport_the_same_objects():
    assert logging_utils.print_prompt_completions_sample is vf.print_prompt_completions_sample
    assert logging_utils.setup_logging is vf.setup_logging
    assert logging_utils.log_level is vf.log_level and logging_utils.quiet_verifiers is vf.quiet_verifiers


def test_tuple_era_call(capsys):
    print_prompt_completions_sample(PROMPTS, COMPLETIONS, [0.5, 1.0], 3)
    out = capsys.readouterr().out
    assert "Step 3" in out and "0.50" in out and "plain prompt" not in out  # one sample by default
    assert "[bold]markup stays text[/bold]" in out and "[tool call] add({\"a\": 2})" in out


def test_state_era_call_shows_errors(capsys):
    print_prompt_completions_sample(PROMPTS, COMPLETIONS, [None, "boom"], [0.5, 1.0], 9, num_samples=2)
    out = capsys.readouterr().out
    assert "Step 9" in out and "plain completion" in out and "error: boom" in out and "1.00" in out


def test_keyword_calls_and_missing_rewards(capsys):
    print_prompt_completions_sample(PROMPTS, COMPLETIONS, errors=[None, None], rewards=[0.25], step=1, num_samples=2)
    out = capsys.readouterr().out
    assert "0.25" in out and "0.00" in out  # a reward not yet known shows as 0.00
    print_prompt_completions_sample(PROMPTS, COMPLETIONS, rewards=[1.0, 1.0], step=2)
    assert "Step 2" in capsys.readouterr().out


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {"rewards": [1.0]}, "missing \\['step'\\]"),
    (([1.0], 1), {"colour": "red"}, "unexpected or repeated argument 'colour'"),
    (([None], [1.0], 1, 1, 1), {}, "at most 6 positional"),
])
def test_bad_calls_are_clear_errors(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        print_prompt_completions_sample(PROMPTS, COMPLETIONS, *args, **kwargs)


def test_setup_logging_sets_level_and_format_with_one_handler(logger, monkeypatch):
    monkeypatch.delenv("VF_LOG_LEVEL", raising=False)
    logger.handlers.clear()
    vf.setup_logging("info", log_format="%(levelname)s|%(message)s")
    vf.setup_logging("debug", log_format="%(message)s", date_format="%H")
    assert logger.level == logging.DEBUG and len(logger.handlers) == 1
    assert logger.handlers[0].formatter.format(logging.makeLogRecord({"msg": "hi"})) == "hi"
    vf.setup_logging()
    assert logger.level == logging.WARNING


def test_log_level_and_quiet_restore_the_level(logger):
    logger.setLevel(logging.DEBUG)
    with vf.log_level("ERROR"):
        assert logger.level == logging.ERROR
    with vf.quiet_verifiers():
        assert logger.level == logging.WARNING
    with vf.log_level(logging.INFO):
        assert logger.level == logging.INFO
    assert logger.level == logging.DEBUG
