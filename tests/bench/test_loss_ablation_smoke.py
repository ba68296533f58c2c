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


def test_the_summary_averages_each_variant_over_its_seeds(bench: ModuleType, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def run(variant: str, seed: int, after: float, greedy: float) -> object:
        return bench.AblationRun(variant, seed, train_rewards=[0.3, 0.4, 0.5 + seed / 10], step_seconds=[1.0],
                                 before={"sampled": 0.3, "greedy": 0.5}, after={"sampled": after, "greedy": greedy},
                                 mismatch_kl_max=0.001 * (seed + 1), masked_max=0.01)

    runs = [run("icepop", 0, 0.5, 0.6), run("icepop", 1, 0.7, 0.8), run("ppo", 0, 0.4, 0.4)]
    bench.summary(runs)
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    # icepop: gains 0.2 and 0.4 -> mean +0.300, sample stdev 0.141; greedy +0.1, +0.3 -> +0.200 ± 0.141
    assert lines["icepop"].split()[1:8] == ["2", "+0.300", "±", "0.141", "+0.200", "±", "0.141"]
    assert lines["ppo"].split()[1:8] == ["1", "+0.100", "±", "0.000", "-0.100", "±", "0.000"]
    assert lines["icepop"].split()[-2] == "0.0020"  # the largest KL of its seeds
    png = tmp_path / "ablation.png"
    bench.plot(runs, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
