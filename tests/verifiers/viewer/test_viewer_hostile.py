"""Run folders written by an attacker: terminal escapes are shown, never obeyed, and no file crashes the viewer
(a 5000-digit integer, nesting deeper than the parser goes, values of the wrong type); each bad file is a row or a
block that says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifiers.viewer.printable import as_text, printable
from verifiers.viewer.rollouts import load_rollouts, read_rollout
from verifiers.viewer.runs import discover_runs, read_run
from verifiers.viewer.screens import transcript_text
from verifiers.viewer.transcript import transcript_blocks

TITLE = "\x1b]0;PWNED\x07"
WIPE = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"
HUGE = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x00", "\r", "\x7f", "\x9b", "\u202e", "\u2066"])
def test_every_character_that_acts_on_a_terminal_is_made_visible(char: str) -> None:
    shown = printable(f"a{char}b")
    assert char not in shown and shown.startswith("a\\") and shown.endswith("b")
    assert printable("tab\there\nnext line · é 中") == "tab\there\nnext line · é 中"


def test_as_text_never_raises_and_stays_short() -> None:
    assert as_text("plain") == "plain"
    assert as_text(json.loads("1" * 100)) == "1" * 100
    assert as_text(10**5000).startswith("(a int that cannot be shown")  # str() of it raises
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    assert as_text(nested).startswith("(a list that cannot be shown")
    assert len(as_text("x" * 10_000)) == 200


def _run(root: Path, name: str, metadata: str, results: str = "") -> Path:
    run_dir = root / "evals" / name / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "metadata.json").write_text(metadata)
    (run_dir / "results.jsonl").write_text(results)
    return run_dir


def test_hostile_metadata_makes_rows_that_say_so(tmp_path: Path) -> None:
    _run(tmp_path, "huge--m", f'{{"env_id": "e", "num_examples": {HUGE}}}')
    _run(tmp_path, "deep--m", f'{{"env_id": "e", "config": {DEEP}}}')
    _run(tmp_path, "typed--m", json.dumps({"env_id": 5, "model": ["x"], "config": [1], "avg_reward": 1e400,
                                           "num_examples": 10**30, "error": {"a": 1}, "date": "x" * 10_000}))
    found = {run.path.parent.name: run for run in discover_runs(tmp_path).runs}
    assert found["huge--m"].status == "error" and "unreadable" in (found["huge--m"].problem or "")
    assert found["deep--m"].status == "error" and "unreadable" in (found["deep--m"].problem or "")
    typed = found["typed--m"]
    assert (typed.env_id, typed.model, typed.num_examples, typed.error) == ("5", '["x"]', None, '{"a": 1}')
    assert len(typed.date) <= 32


def test_hostile_rollout_lines_are_rows_with_a_problem_and_transcripts_that_render(tmp_path: Path) -> None:
    good = {"example_id": 0, "rollout_index": 0, "reward": 1.0, "task": "t",
            "prompt": [{"role": f"user{TITLE}", "content": f"hi{WIPE}"}],
            "completion": [{"role": "assistant", "content": f"ok{CLIPBOARD}",
                            "tool_calls": [{"id": TITLE, "function": {"name": WIPE, "arguments": {"a": 10**20}}}]}],
            "metrics": ["not", "a", "dict"], "scoring_errors": "nor this", "num_turns": 10**40,
            "info": {"deep": json.loads("[" * 200 + "]" * 200)}}
    lines = [json.dumps(good), f'{{"example_id": {HUGE}}}', DEEP,
             json.dumps({"example_id": {"x": 1}, "reward": 10**20, "error": [TITLE]})]
    run_dir = _run(tmp_path, "e--m", "{}", "\n".join(lines) + "\n")
    index = load_rollouts(run_dir / "results.jsonl")
    assert [row.problem is not None for row in index.rows] == [False, True, True, False]
    assert "not valid JSON" in (index.rows[1].problem or "") and "not valid JSON" in (index.rows[2].problem or "")
    assert index.rows[3].example_id == '{"x": 1}' and index.rows[3].reward is None
    text = transcript_text(transcript_blocks(read_rollout(index.path, index.rows[0]))).plain
    for hostile in (TITLE, WIPE, CLIPBOARD):
        assert hostile not in text
    assert "\\x1b]0;PWNED\\x07" in text and "ok\\x1b]52;c;" in text and "num_turns 1" + "0" * 40 in text
    with pytest.raises(ValueError, match="line 2"):
        read_rollout(index.path, index.rows[1])
    assert read_run(run_dir).status == "unknown"
