"""Whole-run resume without processes: which step a run folder continues from, and the folder put back to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer_adapter.errors import RunFolderError
from trainer_adapter.resume import (
    RUN_CONFIG,
    check_fresh_folder,
    config_differences,
    find_resume_point,
    lock_run_folder,
    rewind,
    truncate_jsonl,
)

CONFIG = {"max_steps": 6, "output_dir": "OUT", "orchestrator": {"batch_size": 16, "seed": 0},
          "inference": {"urls": [], "python": ".venv-vllm/bin/python"}, "trainer": {"checkpoint": {"every": 2}}}


def _write_lines(path: Path, steps: range, partial: bool = False) -> None:
    text = "".join(json.dumps({"step": s, "reward": 0.5}) + "\n" for s in steps)
    path.write_text(text + ('{"step": 9, "rew' if partial else ""))


def _killed_run(root: Path, checkpoints=(2,), weights=(0, 2, 3), states=(2, 4), rollouts=(2, 3, 4)) -> Path:
    """A run folder as `kill -9` leaves it: the trainer had finished step 3, the orchestrator written batch 4."""
    root.mkdir(parents=True)
    (root / RUN_CONFIG).write_text(json.dumps(CONFIG))
    for step in checkpoints:
        (root / "checkpoints" / f"step_{step}").mkdir(parents=True)
        (root / "checkpoints" / f"step_{step}" / "progress.json").write_text(json.dumps({"step": step}))
    (root / "checkpoints" / ".step_4.tmp").mkdir(parents=True)  # a checkpoint being written when the run was killed
    for step in weights:
        (root / "weights" / f"step_{step}").mkdir(parents=True)
        (root / "weights" / f"step_{step}" / "config.json").write_text("{}")
    for step in states:
        (root / "orchestrator_state").mkdir(exist_ok=True)
        (root / "orchestrator_state" / f"step_{step}.json").write_text("{}")
    for step in rollouts:
        (root / "rollouts" / f"step_{step}").mkdir(parents=True)
    _write_lines(root / "orchestrator_metrics.jsonl", range(0, 5))
    _write_lines(root / "trainer_metrics.jsonl", range(1, 4), partial=True)
    _write_lines(root / "eval_metrics.jsonl", range(0, 5, 2))
    return root


def test_the_checkpoint_step_wins_over_newer_weights(tmp_path: Path) -> None:
    root = _killed_run(tmp_path / "run")
    point = find_resume_point(root, CONFIG, checkpoint_every=2)
    assert (point.step, point.checkpoint, point.weights, point.state) == (
        2, root / "checkpoints" / "step_2", root / "weights" / "step_2", root / "orchestrator_state" / "step_2.json")


def test_rewind_removes_what_came_after_the_step_and_truncates_the_metrics(tmp_path: Path) -> None:
    root = _killed_run(tmp_path / "run")
    report = rewind(root, 2)
    assert report.dropped_batches == [2, 3, 4]
    assert report.removed_weights == [3]
    assert sorted(p.name for p in (root / "weights").iterdir()) == ["step_0", "step_2"]
    assert not (root / "rollouts").exists()
    assert sorted(p.name for p in (root / "orchestrator_state").iterdir()) == ["step_2.json"]
    assert sorted(p.name for p in (root / "checkpoints").iterdir()) == ["step_2"]

    def steps(name: str) -> list[int]:
        return [json.loads(line)["step"] for line in (root / name).read_text().splitlines()]

    assert steps("orchestrator_metrics.jsonl") == [0, 1]  # batch n: the resumed run writes 2 again
    assert steps("trainer_metrics.jsonl") == [1, 2]  # weights after n steps; the half line is gone too
    assert steps("eval_metrics.jsonl") == [0]
    assert report.removed_lines == {"orchestrator_metrics.jsonl": 3, "trainer_metrics.jsonl": 2,
                                    "eval_metrics.jsonl": 2}
    assert "dropped 3 untrained batch(es) [2, 3, 4]" in report.summary()


def test_a_checkpoint_without_its_orchestrator_state_falls_back_to_an_older_step(tmp_path: Path) -> None:
    root = _killed_run(tmp_path / "run", checkpoints=(2, 4), weights=(2, 4), states=(2,))
    assert find_resume_point(root, CONFIG, checkpoint_every=2).step == 2
    assert rewind(root, 2).removed_checkpoints == [4]


def test_truncate_jsonl_is_a_no_op_when_nothing_goes(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    _write_lines(path, range(3))
    before = path.read_text()
    assert truncate_jsonl(path, lambda line: True) == 0
    assert path.read_text() == before
    assert truncate_jsonl(path, lambda line: line["step"] < 1) == 2
    assert path.read_text() == '{"step": 0, "reward": 0.5}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["m.jsonl"]  # the temporary file was renamed away
    assert truncate_jsonl(tmp_path / "missing.jsonl", lambda line: True) == 0


@pytest.mark.parametrize(("every", "hint"), [
    (0, "checkpoints are off.*set trainer.checkpoint.every"),
    (2, r"stopped before its first checkpoint \(step 2\)"),
])
def test_no_checkpoint_says_so(tmp_path: Path, every: int, hint: str) -> None:
    root = _killed_run(tmp_path / "run", checkpoints=())
    with pytest.raises(RunFolderError, match=f"nothing to resume in .*no complete checkpoint.*{hint}"):
        find_resume_point(root, CONFIG, checkpoint_every=every)


def test_a_checkpoint_without_any_state_is_refused(tmp_path: Path) -> None:
    root = _killed_run(tmp_path / "run", states=())
    with pytest.raises(RunFolderError, match="checkpoint step 2 has no matching orchestrator state"):
        find_resume_point(root, CONFIG, checkpoint_every=2)


def test_another_configs_folder_is_refused(tmp_path: Path) -> None:
    root = _killed_run(tmp_path / "run")
    other = {**CONFIG, "orchestrator": {"batch_size": 32, "seed": 0}}
    with pytest.raises(RunFolderError, match=r"different config \(orchestrator.batch_size: 16 -> 32\).*another folder"):
        find_resume_point(root, other, checkpoint_every=2)
    with pytest.raises(RunFolderError, match="holds no vf-train rl run to resume"):
        find_resume_point(tmp_path, CONFIG, checkpoint_every=2)


def test_where_the_processes_run_may_change(tmp_path: Path) -> None:
    moved = {**CONFIG, "output_dir": "elsewhere",
             "inference": {"urls": ["http://h:8000/v1"], "python": "/usr/bin/python3"}}
    assert config_differences(CONFIG, moved) == []
    assert config_differences(CONFIG, {**CONFIG, "max_steps": 8}) == ["max_steps: 6 -> 8"]
    assert config_differences(CONFIG, {**CONFIG, "seed_extra": 1}) == ["seed_extra: '<unset>' -> 1"]


def test_a_new_run_is_refused_where_one_made_progress(tmp_path: Path) -> None:
    check_fresh_folder(tmp_path / "none")
    (tmp_path / "started").mkdir()
    (tmp_path / "started" / RUN_CONFIG).write_text("{}")  # a run that failed before its first batch: reusable
    check_fresh_folder(tmp_path / "started")
    root = _killed_run(tmp_path / "run")
    with pytest.raises(RunFolderError, match="already holds a vf-train rl run.*--resume or another folder"):
        check_fresh_folder(root)


def test_one_run_per_folder_at_a_time(tmp_path: Path) -> None:
    held = lock_run_folder(tmp_path)
    with pytest.raises(RunFolderError, match="another vf-train rl .* is running"):
        lock_run_folder(tmp_path)
    held.close()
    lock_run_folder(tmp_path).close()  # released with its file, as by a process that died
