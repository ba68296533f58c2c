"""``vf-train``: options generated from the config, and bad input refused before any trainer starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainer_adapter.cli.vf_train import app
from trainer_adapter.config import flat_fields
from trainer_adapter.train.config import SFTConfig

ROOT = Path(__file__).resolve().parents[3]

runner = CliRunner()


def test_every_config_field_is_an_option_with_its_help() -> None:
    result = runner.invoke(app, ["sft", "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    for field in flat_fields(SFTConfig):
        flag = "--" + ".".join(p.replace("_", "-") for p in field.path.split("."))
        assert flag in result.output
        assert field.description.split(";")[0][:40] in result.output


def test_group_lists_sft() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "sft" in result.output


@pytest.mark.parametrize(
    ("toml", "args", "message"),
    [
        ("max_steps = 5\n", [], "data: Field required"),
        ('[data]\nenv = "arithmetic"\n', ["--optimizer.lr", "-1"], "optimizer.lr: Input should be greater than 0"),
        ('[data]\nenv = "arithmetic"\nbogus = 1\n', [], "data.bogus: Extra inputs are not permitted"),
        ("[data\n", [], "is not valid TOML"),
    ],
)
def test_bad_config_exits_2_with_a_message(tmp_path: Path, toml: str, args: list[str], message: str) -> None:
    path = tmp_path / "sft.toml"
    path.write_text(toml)
    result = runner.invoke(app, ["sft", str(path), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_check_validates_and_runs_nothing(tmp_path: Path) -> None:
    main_toml = Path(__file__).resolve().parents[3] / "configs" / "main_job" / "main.toml"
    result = runner.invoke(app, ["main", str(main_toml), "--output-dir", str(tmp_path / "out"), "--check"])
    assert result.exit_code == 0 and "the config and options are valid" in result.output
    assert not (tmp_path / "out").exists()
    result = runner.invoke(app, ["main", str(main_toml), "--rl.lr", "-1", "--check"])
    assert result.exit_code == 2 and "rl.lr: Input should be greater than 0" in result.output


@pytest.mark.slow
def test_main_sh_names_a_typo_before_installing() -> None:
    root = Path(__file__).resolve().parents[3]
    if not (root / ".venv" / "bin" / "vf-train").exists():
        pytest.fail("needs .venv (bash scripts/bootstrap.sh train)")
    done = subprocess.run(["bash", str(root / "scripts" / "main.sh"), "--rl.step", "20"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 2
    assert "No such option: --rl.step" in done.stderr and "--rl.steps" in done.stderr
    assert "install:" not in done.stdout  # the install never started


def test_missing_config_file_and_unknown_option(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sft", str(tmp_path / "none.toml")])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = runner.invoke(app, ["sft", str(tmp_path / "none.toml"), "--optimizer.lrr", "1"])
    assert result.exit_code == 2 and "No such option" in result.output


@pytest.mark.parametrize(
    ("toml", "args", "message"),
    [
        ("max_steps = 5\n", [], "env.id is required"),
        ('[env]\nid = "arithmetic"\n', ["--envs", '[{id = "reverse-text"}]'], "either env.id or envs"),
        ('[env]\nid = "arithmetic"\n', ["--orchestrator.max-fruitless-groups", "0"],
         "orchestrator.max_fruitless_groups: Input should be greater than 0"),
        ('[[envs]]\nid = "arithmetic"\nweight = 0\n', [], "envs.0.weight: Input should be greater than 0"),
        ('[env]\nid = "arithmetic"\n[orchestrator.validation]\nenabled = true\n', ["--inference.dtype", "bfloat16"],
         "orchestrator.validation needs inference.dtype = float32 (not bfloat16)"),
        ('[env]\nid = "arithmetic"\n', ["--orchestrator.validation.max-rejection-rate", "2"],
         "orchestrator.validation.max_rejection_rate: Input should be less than or equal to 1"),
        ('[env]\nid = "arithmetic"\n[orchestrator.validation]\nenabled = true\ntolerance = 1\n', [],
         "orchestrator.validation.tolerance: Extra inputs are not permitted"),
    ],
)
def test_bad_rl_config_exits_2_with_a_message(tmp_path: Path, toml: str, args: list[str], message: str) -> None:
    path = tmp_path / "rl.toml"
    path.write_text(toml)
    result = runner.invoke(app, ["rl", str(path), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_a_failing_rl_run_exits_1_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of the run failing (here: no vLLM interpreter) is one line on stderr and status 1, no traceback."""
    path = tmp_path / "rl.toml"
    path.write_text(f'output_dir = "{tmp_path / "out"}"\n[env]\nid = "arithmetic"\n'
                    f'[inference]\npython = "{tmp_path / "no-python"}"\nstart_timeout_s = 5\n')
    result = runner.invoke(app, ["rl", str(path)])
    assert result.exit_code == 1, result.output
    assert "Error: inference.python" in result.output and "setup_vllm_cpu.sh" in result.output
    assert "Traceback" not in result.output


def _rl_folder(tmp_path: Path) -> Path:
    """An rl config whose output folder holds a run that trained a step but has no checkpoint yet."""
    from trainer_adapter.config import load_config
    from trainer_adapter.rl_run import RLRunConfig, start_run_folder

    path = tmp_path / "rl.toml"
    path.write_text(f'output_dir = "{tmp_path / "out"}"\n[env]\nid = "arithmetic"\n'
                    f'[inference]\npython = "{sys.executable}"\n')
    start_run_folder(load_config(RLRunConfig, path))
    (tmp_path / "out" / "trainer_metrics.jsonl").write_text('{"step": 1}\n')
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resume"], r"nothing to resume in .*no complete checkpoint.*before its first checkpoint \(step 10\)"),
        (["--resume", "--trainer.checkpoint.every", "0"], "different config"),
        (["--resume", "--orchestrator.batch-size", "32"], r"different config \(orchestrator.batch_size: 64 -> 32\)"),
        ([], r"already holds a vf-train rl run \(trainer_metrics.jsonl\): use --resume or another folder"),
    ],
)
def test_rl_into_a_folder_that_does_not_fit_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Refused before anything starts: no server, no trainer, nothing in the folder changed."""
    path = _rl_folder(tmp_path)
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    result = runner.invoke(app, ["rl", str(path), *args], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert re.search(message, " ".join(result.output.split())), result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before


def test_rl_resume_without_a_run_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "rl.toml"
    path.write_text(f'output_dir = "{tmp_path / "none"}"\n[env]\nid = "arithmetic"\n'
                    f'[inference]\npython = "{sys.executable}"\n')
    result = runner.invoke(app, ["rl", str(path), "--resume"])
    assert result.exit_code == 2 and "there is no run to resume" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("sections", "message", "status"),
    [
        ('[[envs]]\nid = "arithmetic"\n[[envs]]\nid = "no-such-env"\n',
         "Error: envs.1 ('no-such-env'): Could not import", 1),
        # a folder that is not a model is bad input: refused before the run, as a usage error
        ('[env]\nid = "arithmetic"\n[model]\npath = "NOPE"\n',
         "Error: model.path NOPE is not a Hugging Face model folder (no config.json)", 2),
    ],
    ids=["unknown environment in a mix", "model.path without a model"],
)
def test_a_bad_environment_or_model_is_named_before_anything_starts(tmp_path: Path, sections: str,
                                                                     message: str, status: int) -> None:
    nope = str(tmp_path / "nope")
    path = tmp_path / "rl.toml"
    path.write_text(f'output_dir = "{tmp_path / "out"}"\n{sections.replace("NOPE", nope)}'
                    f'[inference]\npython = "{sys.executable}"\n')
    result = runner.invoke(app, ["rl", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == status, result.output
    assert message.replace("NOPE", nope) in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()  # the folder is not touched



def test_the_command_line_loads_without_torch_or_transformers() -> None:
    """vf-train builds its options from the configs alone: `vf-train rl` with a missing argument answers in about
    a second instead of the ~15 s torch and transformers take to import on a busy 2-core machine."""
    code = ("import sys, trainer_adapter.cli.vf_train\n"
            "print(sorted(m for m in ('torch', 'transformers', 'peft', 'datasets') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.parametrize(("command", "example"), [("sft", "configs/mix/sft.toml"), ("rl", "configs/mix/rl.toml"),
                                                  ("main", "configs/main_job/main.toml")])
def test_a_missing_config_names_a_shipped_one_and_exits_2(command: str, example: str) -> None:
    done = subprocess.run([sys.executable, "-m", "trainer_adapter.cli.vf_train", command], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"Error: missing CONFIG, the run's TOML file; for example: vf-train {command} {example} "
                           "(more in configs/)\n")
    assert (ROOT / example).is_file()


def test_sigint_stops_vf_train_even_when_its_parent_ignored_it() -> None:
    """A background job inherits SIGINT ignored; the main job stops its vf-train phases with SIGINT all the same."""
    import signal
    import time

    code = ("import signal, sys, time\nsys.argv = ['vf-train', 'model', 'list']\n"
            "from trainer_adapter.cli import vf_train\n"
            "vf_train.app = lambda **kw: (print('ready', flush=True), time.sleep(60))\n"
            "vf_train.main()\n")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    started = time.monotonic()
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=30) != 0 and time.monotonic() - started < 10
