"""bench/learning_reference.py: the in-process reference trains, measures and reports (a tiny budget)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.export import write_hf_folder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(load_script: Callable[[Path, str], ModuleType]) -> ModuleType:
    return load_script(ROOT / "bench" / "learning_reference.py", "learning_reference_bench")


@pytest.fixture
def warm_start(tmp_path: Path) -> Path:
    model, tokenizer = load_model(ModelConfig(num_layers=1, hidden_size=32, num_heads=2, num_kv_heads=1,
                                              intermediate_size=64))
    return write_hf_folder(model.state_dict(), model, tokenizer, tmp_path / "weights")


def test_the_sampler_stops_at_the_end_of_turn_and_respects_max_tokens(bench: ModuleType, warm_start: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(warm_start, dtype=torch.float32)
    replies = bench.sample(model, [[1, 2, 3], [4, 5]], 1.0, 5, eos=7, generator=torch.Generator().manual_seed(0))
    assert len(replies) == 2
    for reply in replies:
        assert 1 <= len(reply) <= 5 and 7 not in reply[:-1]  # nothing after the end of turn


def test_group_advantages(bench: ModuleType) -> None:
    assert bench.advantages([1.0, 0.0, 0.0, 1.0], std_normalize=False) == [0.5, -0.5, -0.5, 0.5]
    assert bench.advantages([1.0, 0.0], std_normalize=True) == pytest.approx([1.0, -1.0], abs=1e-5)
    assert bench.advantages([0.5, 0.5], std_normalize=True) == [0.0, 0.0]


def test_a_reference_run_reports_before_and_after(bench: ModuleType, warm_start: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "curves.png"
    code = bench.main(["--warm-start", str(warm_start), "--only", "reference", "--steps", "2", "--problems", "2",
                       "--rollouts", "2", "--eval-rows", "3", "--eval-samples", "1", "--out", str(tmp_path / "o"),
                       "--png", str(png)])
    out = capsys.readouterr().out
    assert code == 0
    assert "reference step 2/2" in out and "held-out sampled" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "o" / "reference_weights" / "config.json").is_file()
