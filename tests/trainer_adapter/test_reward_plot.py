"""``vf-train plot``'s curves from a run's metrics files, the PNG, and bad run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainer_adapter.cli.vf_train import app
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.reward_plot import PlotConfig, plot_run, read_run_metrics, reward_curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _mixed_run(root: Path, steps: int = 5) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _write(
        root / "orchestrator_metrics.jsonl",
        [
            {
                "step": s,
                "reward": 0.2 + 0.1 * s,
                "rollouts": 32,
                "reward/arithmetic": 0.1 * s,
                "share/arithmetic": 0.75,
                "reward/reverse-text": 0.5 + 0.05 * s,
                "share/reverse-text": 0.25,
            }
            for s in range(steps)
        ],
    )
    _write(
        root / "eval_metrics.jsonl",
        [
            {"step": s, "weights_version": s, "reward": 0.3, "reward/arithmetic": 0.2, "reward/reverse-text": 0.4}
            for s in (steps, 0)
        ],
    )  # written out of order: the final evaluation may land before an earlier one
    return root


def test_curves_overall_and_per_environment(tmp_path: Path) -> None:
    curves = {c.label: c for c in reward_curves(*read_run_metrics(_mixed_run(tmp_path / "run")))}
    assert list(curves) == [
        "training reward, all",
        "training reward, arithmetic",
        "training reward, reverse-text",
        "held-out reward (greedy), arithmetic",
        "held-out reward (greedy), reverse-text",
    ]
    assert curves["training reward, arithmetic"].steps == [0, 1, 2, 3, 4]
    assert curves["training reward, arithmetic"].rewards == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert curves["training reward, all"].rewards[0] == pytest.approx(0.2)
    held_out = curves["held-out reward (greedy), reverse-text"]
    assert (
        held_out.held_out
        and held_out.steps == [0, 5]
        and held_out.colour == curves["training reward, reverse-text"].colour
    )


def test_a_single_environment_run_has_one_training_and_one_held_out_curve(tmp_path: Path) -> None:
    train = [{"step": 0, "reward": 0.5}, {"step": 1, "reward": 0.7}]
    curves = reward_curves(train, [{"step": 2, "reward": 0.6}])
    assert [(c.label, c.rewards) for c in curves] == [
        ("training reward", [0.5, 0.7]),
        ("held-out reward (greedy)", [0.6]),
    ]


def test_a_sampled_evaluation_is_labelled_with_its_temperature_and_replies() -> None:
    evals = [{"step": 0, "reward": 0.4, "examples": 100, "rollouts": 400, "temperature": 1.0}]
    assert [c.label for c in reward_curves([], evals)] == ["training reward", "held-out reward (T=1, 4 replies a row)"]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    root = _mixed_run(tmp_path / "run")
    path = plot_run(PlotConfig(run_dir=root))
    assert path == root / "reward_curve.png" and path.read_bytes()[:8] == PNG_MAGIC
    elsewhere = plot_run(PlotConfig(run_dir=root, png=tmp_path / "img" / "mix.png"))
    assert elsewhere.read_bytes()[:8] == PNG_MAGIC


def test_the_command_draws_and_says_where(tmp_path: Path) -> None:
    root = _mixed_run(tmp_path / "run")
    result = CliRunner().invoke(app, ["plot", str(root), "--png", str(tmp_path / "out.png")])
    assert result.exit_code == 0, result.output
    assert f"reward curve: {tmp_path / 'out.png'}" in result.output
    assert (tmp_path / "out.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist: .* is not a vf-train rl run folder"),
        ("", "has no complete metrics line yet"),
        ('{"step": 0, "rew', "has no complete metrics line yet"),  # a half-written first line
        ('{"loss": 1.0}\n', "lines without step and reward"),
    ],
)
def test_bad_run_folders_exit_2_with_the_reason(tmp_path: Path, content: str | None, message: str) -> None:
    root = tmp_path / "run"
    root.mkdir()
    if content is not None:
        (root / "orchestrator_metrics.jsonl").write_text(content)
    with pytest.raises(TrainerConfigError, match=message):
        read_run_metrics(root)
    result = CliRunner().invoke(app, ["plot", str(root)])
    assert result.exit_code == 2 and "Error:" in result.output and "Traceback" not in result.output
    assert not (root / "reward_curve.png").exists()
