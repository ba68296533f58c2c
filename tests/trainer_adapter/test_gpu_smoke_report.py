"""The gpu_smoke summary block: every figure it prints comes from the files the measurement and the job wrote."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import typer

from trainer_adapter.errors import TrainerError
from trainer_adapter.gpu_smoke_report import format_block, parse_wall, read_job, trainer_rates
from trainer_adapter.inference.measure import Measurement
from trainer_adapter.main_job_config import MainJobConfig


def _jsonl(path: Path, lines: list[dict[str, float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _job(root: Path, steps: int = 12) -> Path:
    job = root / "main_job"
    config = MainJobConfig(output_dir=job, sft={"num_layers": 2, "hidden_size": 64, "num_heads": 4,
                                               "num_kv_heads": 2, "intermediate_size": 128})  # fmt: skip
    job.mkdir(parents=True)
    (job / "main_job_config.json").write_text(config.model_dump_json())
    summary = {"before": 0.3125, "after": 0.5, "greedy_before": 0.4, "greedy_after": 0.7,
               "mismatch_kl": {"mean": 0.00123, "max": 0.00456}, "seconds": {"sft": 61.0, "rl": 200.4}}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))
    _jsonl(
        job / "rl" / "orchestrator_metrics.jsonl",
        [{"step": s, "reward": 0.1 + s / 100, "time/update_weights": 0.2 + s / 10} for s in range(steps)],
    )
    _jsonl(job / "rl" / "trainer_metrics.jsonl",
           [{"step": s + 1, "tokens": 1000 * (s + 1), "time/step": 2.0, "time/wait_for_batch": 1.0,
             "time/export": 0.25} for s in range(steps)])  # fmt: skip
    return job


MEASURED = Measurement(model="/m/base", dtype="bfloat16", ready_s=41.25, requests=256, max_tokens=256,
                       tokens_per_s=12345.6, tokens_per_s_with_updates=11111.1, update_idle_s=[0.5, 0.7, 0.6],
                       update_under_load_s=[0.9, 1.3])  # fmt: skip


def test_trainer_tokens_per_s_leaves_out_the_wait_for_the_batch() -> None:
    lines = [{"tokens": 600, "time/step": 4.0, "time/wait_for_batch": 1.0}, {"time/step": 1.0},
             {"tokens": 10, "time/step": 1.0, "time/wait_for_batch": 1.0}]  # fmt: skip
    assert trainer_rates(lines) == [200.0]  # no tokens logged, or no busy time: no rate


def test_the_block_shows_each_figure_once(tmp_path: Path) -> None:
    block = format_block(MEASURED, read_job(_job(tmp_path)), {"measure": 95.4, "main_job": 300.0})
    lines = block.splitlines()
    assert lines[0] == "== gpu_smoke summary"
    assert "steps 1-10: " + " ".join(f"{0.1 + s / 100:.3f}" for s in range(10)) in block
    assert "steps 11-12: 0.200 0.210" in block
    assert "0.312 -> 0.500" in block and "greedy accuracy 0.400 -> 0.700" in block
    assert "mean 0.00123, max 0.00456" in block
    assert "idle median 0.600 s, max 0.700 s (n=3)" in block and "under load median 1.100 s" in block
    in_rl = statistics.median([0.2 + s / 10 for s in range(12)])
    assert f"in RL median {in_rl:.3f} s" in block and "trainer export median 0.250 s" in block
    assert "12346 tokens/s (256 requests x 256 tokens, bfloat16); 11111 with updates" in block
    assert f"median {statistics.median([1000.0 * (s + 1) for s in range(12)]):.0f} tokens/s" in block
    assert "measure 95 s, main_job 300 s" in block and "sft 61 s, rl 200 s" in block
    assert "M parameters (2 layers x 64 wide" in block
    assert sum(line.startswith("== ") for line in lines) == 1  # one block


def test_a_job_that_did_not_finish_is_a_clear_error(tmp_path: Path) -> None:
    job = _job(tmp_path)
    (job / "summary.json").unlink()
    with pytest.raises(TrainerError, match="summary.json does not exist"):
        read_job(job)


def test_wall_times_are_name_equals_seconds() -> None:
    assert parse_wall(["measure=95", "main_job=420.5"]) == {"measure": 95.0, "main_job": 420.5}
    for bad in ("measure", "=3", "x=fast"):
        with pytest.raises(typer.BadParameter, match="NAME=SECONDS"):
            parse_wall([bad])
