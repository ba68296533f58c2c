"""The shown ``vf-eval`` command: values from ``[tool.verifiers.eval]`` are checked, and every word is quoted."""

from __future__ import annotations

import shlex

import pytest

from hub_server.eval_command import eval_command

TAIL = ["-m", "MODEL", "-b", "BASE_URL"]


def test_valid_defaults_become_flags() -> None:
    command = eval_command("demo-env", [("num_examples", 20), ("rollouts_per_example", 3), ("max_tokens", 64)])
    assert command.text == "vf-eval demo-env -n 20 -r 3 -m MODEL -b BASE_URL"  # keys without a flag are skipped
    assert command.notes == ()
    assert eval_command("demo-env", [("num_examples", -1)]).text.startswith("vf-eval demo-env -n -1 ")


def test_a_hostile_value_never_reaches_the_shell() -> None:
    command = eval_command("xss-env", [("num_examples", "5; rm -rf ~ #"), ("rollouts_per_example", 3)])
    assert "rm -rf" not in command.text and ";" not in command.text
    assert shlex.split(command.text) == ["vf-eval", "xss-env", "-r", "3", *TAIL]
    note = "[tool.verifiers.eval] num_examples = '5; rm -rf ~ #' is not an integer; left out of the command."
    assert command.notes == (note,)


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("num_examples", True, "is not an integer"),
    ("num_examples", 2.5, "is not an integer"),
    ("num_examples", "20", "is not an integer"),
    ("num_examples", 0, "is out of range"),
    ("num_examples", -2, "is out of range"),
    ("rollouts_per_example", -1, "is out of range"),
    ("rollouts_per_example", 10**12, "is out of range"),
])
def test_bad_values_are_left_out_with_a_note(key: str, value: object, problem: str) -> None:
    command = eval_command("demo-env", [(key, value)])
    assert shlex.split(command.text) == ["vf-eval", "demo-env", *TAIL]
    [note] = command.notes
    assert note.startswith(f"[tool.verifiers.eval] {key} = {value!r} {problem}")


def test_every_word_is_quoted_and_long_values_are_cut_in_notes() -> None:
    command = eval_command("odd name$(id)", [("num_examples", "x" * 500)])
    assert shlex.split(command.text)[:2] == ["vf-eval", "odd name$(id)"]
    assert "'odd name$(id)'" in command.text
    assert len(command.notes[0]) < 200 and "…" in command.notes[0]
