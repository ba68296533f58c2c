"""``vf-tui`` as a user runs it: one-line refusals (no runs, no Textual), and the viewer in a real terminal
(tmux) over a run the real ``vf-eval`` made against the scripted server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.terminal import Terminal, tmux_terminal
from verifiers.testing import Reply, ScriptedRequest
from verifiers.testing.policies import content_text

ROOT = Path(__file__).resolve().parents[3]

ENV_SOURCE = textwrap.dedent('''
    import verifiers as vf
    from datasets import Dataset

    def reverse_word(word: str) -> str:
        """Reverse a word."""
        return word[::-1]

    def load_environment():
        ds = Dataset.from_list([{"question": f"word{i}", "answer": f"word{i}"[::-1]} for i in range(6)])

        def correct(completion, answer) -> float:
            return float(completion[-1]["content"] == answer)

        return vf.ToolEnv(tools=[reverse_word], dataset=ds, eval_dataset=ds, rubric=vf.Rubric(funcs=[correct]),
                          max_turns=4)
''')


def _vf_tui(*args: str, hide: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``vf-tui ARGS`` through its console-script entry, with ``hide`` made unimportable."""
    hiding = f"sys.modules[{hide!r}] = None\n" if hide else ""
    code = (f"import sys\n{hiding}sys.argv = ['vf-tui', *{list(args)!r}]\n"
            "from verifiers.cli.vf_tui import main\nmain()\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_without_textual_vf_tui_names_the_extra_to_install(tmp_path: Path) -> None:
    done = _vf_tui(str(tmp_path), hide="textual")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "pip install -e '.[tui]'" in done.stderr and "'textual'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("make", ["missing", "empty", "no runs"])
def test_no_runs_is_one_line_and_exit_2(tmp_path: Path, make: str) -> None:
    outputs = tmp_path / "outputs"
    if make != "missing":
        outputs.mkdir()
    if make == "no runs":
        (outputs / "evals" / "toy--m").mkdir(parents=True)
    done = _vf_tui(cwd=tmp_path) if make == "missing" else _vf_tui(str(outputs))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    expected = "is not a folder" if make == "missing" else "no evaluation runs under"
    assert done.stderr.startswith("vf-tui: error: ") and expected in done.stderr


class ToolModel:
    """Calls ``reverse_word`` on the word, then answers with the result; word1 and word4 get a wrong answer
    that looks like markup, word3 a 503 (its rollout errors)."""

    def __call__(self, request: ScriptedRequest) -> Reply:
        word = request.last_user_text
        if word == "word3":
            return Reply(status=503)
        results = [m for m in request.messages if m.get("role") == "tool"]
        if not results:
            arguments = json.dumps({"word": word})
            call = {"id": "call_0", "type": "function", "function": {"name": "reverse_word", "arguments": arguments}}
            return Reply("", tool_calls=[call])
        if word in ("word1", "word4"):
            return Reply(f"[bold]wrong[/] {word}")
        return Reply(content_text(results[-1].get("content")))


@pytest.fixture
def evaluated(tmp_path: Path, serve) -> Path:
    """The outputs folder of a real ``vf-eval`` run: 6 tool-calling rollouts, rewards 1 0 1 (error) 0 1."""
    folder = tmp_path / "environments" / "tui_env"
    folder.mkdir(parents=True)
    (folder / "tui_env.py").write_text(ENV_SOURCE)
    url = serve(ToolModel())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "verifiers.cli.vf_eval", "tui-env", "-m", "scripted", "-b", url,
                           "-n", "6", "-r", "1", "--max-retries", "0"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "outputs"


@pytest.mark.slow
def test_a_user_browses_a_vf_eval_run_in_a_real_terminal(evaluated: Path, tmp_path: Path) -> None:
    with tmux_terminal(tmp_path, {"PYTHONPATH": str(ROOT)}) as terminal:
        _browse(terminal(sys.executable, "-m", "verifiers.cli.vf_tui", str(evaluated)))


def _browse(term: Terminal) -> None:
    shown = term.wait_for("1 run under", "tui-env", "scripted", "6 × 1", "0.600", "complete")
    assert "Traceback" not in shown
    term.keys("Enter")
    shown = term.wait_for("6 of 6 rollouts shown (all rollouts)", "1 errored", "✗ ModelError")
    term.keys("e", "Enter")  # the errored rollout (example 3)
    term.wait_for("example 3 · rollout 0", "rollout error", "ModelError")
    term.keys("Escape")  # alone: an Esc that arrives with the next key's bytes reads as Alt+key
    term.wait_for("6 of 6 rollouts shown")
    term.keys("Up", "Up", "Enter")  # example 1: a tool call, its result, a wrong answer
    shown = term.wait_for("example 1 · rollout 0", "tool call · call_0", "tool result · call_0")
    for expected in ('reverse_word({"word": "word1"})', "1drow", "[bold]wrong[/] word1", "reward  0.000",
                     "correct  0.000", " user\n   word1"):
        assert expected in shown, shown
    term.keys("Escape")
    term.wait_for("6 of 6 rollouts shown")
    term.keys("f")
    shown = term.wait_for("3 of 6 rollouts shown (reward ≥ 0.5)")
    assert "✗" not in shown
    term.keys("f")
    term.wait_for("3 of 6 rollouts shown (reward < 0.5)", "✗ ModelError")
    term.keys("m", "0", ".", "5", "Enter")
    term.wait_for("3 of 6 rollouts shown (reward ≥ 0.5)")
    term.keys("q")
    term.wait_exited()


@pytest.mark.slow
def test_hostile_run_folders_neither_command_the_terminal_nor_crash_the_viewer(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    title, wipe, clipboard = "\x1b]0;PWNED\x07", "\x1b[2J\x1b[H", "\x1b]52;c;cHduZWQ=\x07"
    record = {"example_id": 0, "rollout_index": 0, "reward": 1.0,
              "prompt": [{"role": "user", "content": f"hello{wipe}"}],
              "completion": [{"role": "assistant", "content": f"answer{title}{clipboard}"}]}
    hostile = {"evil--m": (json.dumps({"env_id": f"env{title}", "model": f"model{wipe}", "status": "complete",
                                       "date": "2026-01-02T00:00:00+00:00"}), json.dumps(record) + "\n"),
               "huge--m": ('{"num_examples": ' + "9" * 5000 + "}", ""),
               "deep--m": ('{"config": ' + "[" * 100_000 + "]" * 100_000 + "}", "[" * 100_000 + "\n")}
    for name, (metadata, results) in hostile.items():
        run_dir = outputs / "evals" / name / "r1"
        run_dir.mkdir(parents=True)
        (run_dir / "metadata.json").write_text(metadata)
        (run_dir / "results.jsonl").write_text(results)
    with tmux_terminal(tmp_path, {"PYTHONPATH": str(ROOT)}) as terminal:
        term = terminal(sys.executable, "-m", "verifiers.cli.vf_tui", str(outputs))
        # the two unreadable runs are rows named after their folders (their notes are in a column off screen)
        shown = term.wait_for("3 runs under", "env\\x1b]0;PWNED\\x07  model\\x1b[2J\\x1b[H", " huge ", " deep ")
        assert "Traceback" not in shown
        term.keys("Enter")  # the newest run: the hostile one
        term.wait_for("1 of 1 rollouts shown")
        term.keys("Enter")
        shown = term.wait_for("answer\\x1b]0;PWNED\\x07\\x1b]52;c;cHduZWQ=\\x07", "hello\\x1b[2J\\x1b[H")
        pane_title = term._run("display-message", "-p", "-t", "tui", "#{pane_title}").strip()
        assert "PWNED" not in pane_title
        term.keys("Escape")
        term.wait_for("1 of 1 rollouts shown")
        term.keys("Escape")
        term.wait_for("3 runs under")
        term.keys("Down", "Down", "Enter")  # the run whose results file is one 100k-deep line
        term.wait_for("1 of 1 rollouts shown", "1 errored", "not valid JSON")
        term.keys("q")
        term.wait_exited()
        assert "Traceback" not in term.screen()
