"""The rollout engine benchmark: its shared environment file, its arguments, and a smoke run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "rollout_engine.py"


@pytest.fixture
def bench_envs(load_script) -> ModuleType:
    return load_script(ROOT / "bench" / "envs" / "bench_envs.py", "bench_envs_under_test")


@pytest.mark.parametrize(("kind", "policy", "roles"), [
    ("multiturn", "turns:3", ["assistant", "user", "assistant", "user", "assistant"]),
    ("tool", "tools:2", ["assistant", "tool", "assistant", "tool", "assistant"]),
])
async def test_bench_env_runs_three_model_turns(bench_envs, serve, client_for, kind, policy, roles) -> None:
    env = bench_envs.load_environment(kind=kind, n=4)
    results = await env.evaluate(client_for(serve(policy)), "scripted", num_examples=4, max_concurrent=2)
    outputs = results["outputs"]
    assert [[m["role"] for m in o["completion"]] for o in outputs] == [roles] * 4
    assert [o["reward"] for o in outputs] == [1.0] * 4
    assert bench_envs.IN_FLIGHT.now == 0 and bench_envs.IN_FLIGHT.peak == 2


async def test_tool_env_answers_with_the_last_tool_result(bench_envs, serve, client_for) -> None:
    env = bench_envs.load_environment(kind="tool", n=1)
    results = await env.evaluate(client_for(serve("tools:2")), "scripted", num_examples=1)
    completion = results["outputs"][0]["completion"]
    assert [m["content"] for m in completion if m["role"] == "tool"] == ["5", "X"]  # add(2, 3), shout("x")
    assert completion[-1]["content"] == "X"


@pytest.mark.parametrize("kwargs", [{"kind": "chess"}, {"n": 0}])
def test_bench_env_rejects_bad_arguments(bench_envs, kwargs) -> None:
    with pytest.raises(ValueError):
        bench_envs.load_environment(**kwargs)


@pytest.mark.parametrize("argv", [["--repeats", "0"], ["--only", "both"], ["--concurrency", "many"]])
def test_bench_rejects_bad_flags(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, str(BENCH), *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "error" in done.stderr


def _run(sdk: str, repeat: int, wall_s: float, cpu_s: float) -> dict:
    return {"sdk": sdk, "config": "tool c=2", "repeat": repeat, "rollouts": 10, "wall_s": wall_s, "cpu_s": cpu_s,
            "peak_rss_mib": 100.0, "rss_before_mib": 90.0, "server_util": 0.1, "mean_messages": 5.0,
            "mean_reward": 1.0, "peak_in_flight": 2}


def test_saved_runs_are_tabulated_with_paired_ratios_and_failures(tmp_path: Path, capsys, load_script) -> None:
    bench = load_script(BENCH, "rollout_engine_under_test")
    runs = [_run("ours", 0, 1.0, 0.5), _run("original", 0, 4.0, 2.0),
            _run("ours", 1, 2.0, 1.0), _run("original", 1, 2.0, 1.0),
            _run("ours", 2, 1.0, 0.25), _run("original", 2, 3.0, 1.0),
            {"sdk": "ours", "config": "in flight 10", "repeat": 0, "failed": "timed out after 9 seconds"}]
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps({"runs": runs}))
    assert bench.main(["--from-json", str(saved)]) == 1  # a failed run makes the exit status 1
    out = capsys.readouterr().out
    ratio_line = next(line for line in out.splitlines() if "ours/orig" in line)
    assert ratio_line.split()[1:4] == ["3.00x", "0.25x", "1.00x"]  # medians of (4, 1, 3), (1/4, 1, 1/4), (1, 1, 1)
    assert "FAILED in flight 10 ours #0: timed out after 9 seconds" in out


@pytest.mark.slow
def test_quick_run_prints_figures_for_our_sdk(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "ours", "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines() if " ours " in f" {line} "]
    assert [(line[0], line[2]) for line in lines] == [("multiturn", "ours"), ("tool", "ours")]
    assert all(float(line[3]) > 0 and float(line[4]) > 0 for line in lines)  # rollouts/s, CPU ms/rollout
    saved = json.loads(out.read_text())
    assert {r["config"] for r in saved["runs"]} == {"multiturn c=16", "tool c=16"}
    assert all(r["errors"] == 0 and r["mean_messages"] == 5.0 and r["peak_in_flight"] == 16 for r in saved["runs"])
