"""bench/loss_ablation.py: every variant makes a valid vf-train rl config, and bad options are refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from trainer_adapter.rl_run import RLRunConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(load_script: Callable[[Path, str], ModuleType]) -> ModuleType:
    return load_script(ROOT / "bench" / "loss_ablation.py", "loss_ablation_bench")


@pytest.mark.parametrize("variant", ["icepop", "ppo", "gspo", "cispo", "icepop-seqnorm", "icepop-kl", "icepop-stdnorm"])
def test_each_variant_is_the_main_job_recipe_with_one_change(bench: ModuleType, variant: str, tmp_path: Path) -> None:
    ref = bench.load_reference_bench()
    budget = ref.Budget(steps=3, problems=4, rollouts=8, lr=2e-4, warmup_steps=1, temperature=1.0, max_tokens=8,
                        seed=0, num_train_examples=100)
    raw = bench.run_config(ref, variant, tmp_path / "w", budget, tmp_path / "out", "http://127.0.0.1:1/v1")
    config = RLRunConfig.model_validate(raw)
    loss, orchestrator = bench.VARIANTS[variant]
    assert config.trainer.loss.type == loss["type"]
    assert config.orchestrator.max_async_level == 1 and config.orchestrator.continuous_batching
    assert config.orchestrator.advantage_std_normalize == orchestrator.get("advantage_std_normalize", False)
    assert config.trainer.loss.kl_coef == loss.get("kl_coef", 0.0)
    assert config.trainer.loss.normalization == loss.get("normalization", "token")
    assert config.max_steps == 3 and config.orchestrator.batch_size == 32


def test_unknown_variants_and_seeds_are_refused(bench: ModuleType, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    weights = tmp_path / "w"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    for argv in (["--variants", "icepop,dpo"], ["--seeds", "0,x"], ["--variants", ","]):
        with pytest.raises(SystemExit) as exit_:
            bench.main(["--warm-start", str(weights), *argv])
        assert exit_.value.code == 2
    assert "unknown variant" in capsys.readouterr().err


def test_a_warm_start_that_is_not_a_weights_folder_is_refused(bench: ModuleType, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--warm-start", str(tmp_path)])
    assert exit_.value.code == 2 and "not a Hugging Face weights folder" in capsys.readouterr().err
