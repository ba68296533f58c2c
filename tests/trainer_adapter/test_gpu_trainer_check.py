"""The GPU trainer check (trainer_adapter.gpu_trainer_check): prepare's files, its bad input, and a whole run on the
CPU at a tiny shape (the GPU run is recorded in docs/gpu.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trainer_adapter import gpu_trainer_check
from trainer_adapter.gpu_trainer_check import main, prepare
from trainer_adapter.model import greedy

ROOT = Path(__file__).resolve().parents[2]
TINY = ["precision=float32", "sft.num_layers=2", "sft.hidden_size=64", "sft.num_heads=2", "sft.num_kv_heads=1",
        "sft.intermediate_size=128", "sft.steps=30", "rl.steps=2", "rl.batch_size=32", "rl.warmup_steps=0"]


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_prepare_writes_disjoint_rows_and_the_phase_configs(tmp_path: Path) -> None:
    prepare(tmp_path, ROOT / "configs" / "main_job" / "gpu.toml", ["rl.steps=7"])
    train, held_out = _rows(tmp_path / "train.jsonl"), _rows(tmp_path / "eval.jsonl")
    assert (len(train), len(held_out)) == (5000, 200)
    assert not {json.dumps(r["prompt"]) for r in train} & {json.dumps(r["prompt"]) for r in held_out}
    sft = json.loads((tmp_path / "sft.json").read_text())
    assert sft["data"]["path"] == str(tmp_path / "train.jsonl") and "env" not in sft["data"]
    assert (sft["precision"], sft["model"]["hidden_size"]) == ("bfloat16", 768)
    assert json.loads((tmp_path / "check.json").read_text())["rl"]["steps"] == 7


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["prepare", "{out}", "rl.stepz=3"], "rl.stepz"),
        (["prepare", "{out}", "--config", "{out}/missing.toml"], "no main job config"),
        (["run", "{out}"], "run `prepare"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([a.format(out=tmp_path) for a in argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_held_out_accuracy_is_the_share_of_exact_replies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the tiny CPU run's accuracy may well be 0, which a broken computation also gives: scripted replies check it
    rows = [{"prompt": [{"role": "user", "content": q}], "answer": a}
            for q, a in [("1+1", "2"), ("2+2", "4"), ("3+3", "6"), ("4+4", "8")]]
    replies = {"1+1": " 2\n", "2+2": "5", "3+3": "6", "4+4": "8."}  # stripped: right, wrong, right, wrong
    asked: list[tuple[Path, str]] = []

    def scripted(model_dir: Path, prompts: list[list[dict[str, str]]], device: str = "cpu") -> list[str]:
        asked.append((model_dir, device))
        return [replies[p[-1]["content"]] for p in prompts]

    monkeypatch.setattr(greedy, "greedy_replies", scripted)
    assert gpu_trainer_check._accuracy(tmp_path / "weights", rows) == 0.5
    assert asked == [(tmp_path / "weights", gpu_trainer_check._device())]


@pytest.mark.slow
def test_a_whole_run_on_the_cpu_trains_and_its_logprobs_are_the_trainers(tmp_path: Path) -> None:
    out = tmp_path / "check"
    prepare(out, ROOT / "configs" / "main_job" / "gpu.toml", TINY)
    done = subprocess.run([sys.executable, "-m", "trainer_adapter.gpu_trainer_check", "run", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "== gpu_trainer_check summary" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sft"]["steps"] == 30 and summary["rl"]["steps"] == 2
    assert len(summary["rl"]["reward_per_step"]) == 2
    # the reported accuracy is the RL weights' on the held-out rows: recomputed here from their greedy replies
    held_out: list[dict[str, Any]] = _rows(out / "eval.jsonl")
    replies = greedy.greedy_replies(out / "rl" / "weights" / "step_2", [r["prompt"] for r in held_out],
                                    device=gpu_trainer_check._device())
    correct = sum(reply.strip() == row["answer"] for reply, row in zip(replies, held_out, strict=True))
    assert summary["greedy_accuracy"]["rl"] == correct / len(held_out)
    # float32 on both sides: the sampled tokens' logprobs kept by the check are the trainer's own, so the mismatch
    # KL is zero up to rounding; a wrong token/logprob alignment would make it large
    assert all(abs(kl) < 1e-5 for kl in summary["rl"]["mismatch_kl"])
    assert (out / "rl" / "weights" / "step_2" / "config.json").is_file()
