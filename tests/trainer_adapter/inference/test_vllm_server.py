"""The vLLM command line the launcher builds, its CLI, and how a server that cannot start is reported."""

from __future__ import annotations

import getpass
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from trainer_adapter.inference.errors import InferenceServerError
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
from verifiers.errors import UsageError


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_argv_sets_the_weight_extension_routes_and_processed_logprobs() -> None:
    argv = InferenceConfig(model="/m", port=8123, served_model_name="tiny", extra_args=["--max-logprobs", "5"]).argv()
    assert flag(argv, "--worker-extension-cls") == "trainer_adapter.inference.weight_worker.WeightUpdateWorker"
    assert flag(argv, "--middleware") == "trainer_adapter.inference.weight_routes.WeightRoutes"
    assert flag(argv, "--logprobs-mode") == "processed_logprobs"
    assert (flag(argv, "--model"), flag(argv, "--port"), flag(argv, "--served-model-name")) == ("/m", "8123", "tiny")
    assert "--enforce-eager" in argv and argv[-2:] == ["--max-logprobs", "5"]
    assert "--gpu-memory-utilization" not in argv
    assert InferenceConfig(model="/m", kv_cache_gib=3, keep_alive_s=90).env() == {
        "VLLM_CPU_KVCACHE_SPACE": "3", "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "90"}


def test_keep_alive_must_be_positive() -> None:
    with pytest.raises(ValidationError):
        InferenceConfig(model="/m", keep_alive_s=0)


def test_one_server_can_answer_to_several_model_names() -> None:
    argv = InferenceConfig(model="/m", served_model_name=["tiny", "tiny-sft"]).argv()
    names = argv[argv.index("--served-model-name") + 1 :][:2]
    assert names == ["tiny", "tiny-sft"] and argv[argv.index("--served-model-name") + 3].startswith("--")


def test_a_tool_call_parser_turns_on_auto_tool_choice() -> None:
    argv = InferenceConfig(model="/m", tool_call_parser="hermes").argv()
    assert "--enable-auto-tool-choice" in argv and flag(argv, "--tool-call-parser") == "hermes"
    plain = InferenceConfig(model="/m").argv()
    assert "--enable-auto-tool-choice" not in plain and "--tool-call-parser" not in plain


@pytest.mark.parametrize("parser", ["", "hermes --x", "a;b"])
def test_a_bad_tool_call_parser_is_rejected(parser: str) -> None:
    with pytest.raises(ValueError, match="tool_call_parser"):
        InferenceConfig(model="/m", tool_call_parser=parser)


def test_tool_flags_go_through_tool_call_parser() -> None:
    with pytest.raises(UsageError, match="set tool_call_parser instead"):
        InferenceConfig(model="/m", extra_args=["--tool-call-parser", "hermes"]).argv()


@pytest.mark.parametrize(
    "extra", [["--logprobs-mode", "raw_logprobs"], ["--port=1"], ["--worker-extension-cls", "x.Y"],
              ["--enable-auto-tool-choice"]]
)
def test_extra_args_cannot_override_what_the_launcher_owns(extra: list[str]) -> None:
    with pytest.raises(UsageError, match="may not set"):
        InferenceConfig(model="/m", extra_args=extra).argv()


@pytest.mark.parametrize("bad", [{"port": 0}, {"dtype": "int8"}, {"kv_cache_gib": 0}, {"model": "/m", "typo": 1}])
def test_bad_settings_are_rejected(bad: dict) -> None:
    with pytest.raises(ValueError):
        InferenceConfig(**{"model": "/m", **bad})


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainer_adapter.inference.vllm_server", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_cli_dry_run_prints_the_vllm_command(tmp_path: Path) -> None:
    config = tmp_path / "inference.toml"
    config.write_text('model = "/models/tiny"\nport = 8555\n')
    result = run_cli("--config", str(config), "port=8556", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "-m vllm.entrypoints.openai.api_server --model /models/tiny" in result.stdout
    assert "--port 8556" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [(["modle=/m"], "did you mean 'model'"), (["port=8000"], "model"), (["model=/m", "port=-1"], "port")],
)
def test_cli_reports_bad_settings(args: list[str], message: str) -> None:
    result = run_cli(*args, "--dry-run")
    assert result.returncode == 2 and message in result.stderr


def test_help_lists_every_setting() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for name in InferenceConfig.model_fields:
        assert name in result.stdout


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    # This interpreter has no vLLM: the child exits at once, and start() says so instead of waiting.
    log = tmp_path / "vllm.log"
    server = InferenceServer(InferenceConfig(model="/m", port=8557), python=sys.executable, log_path=log)
    with pytest.raises(InferenceServerError, match="exited with code 1"):
        server.start(timeout=60)
    assert "vllm" in log.read_text()
    server.stop()  # already gone: a no-op
    with pytest.raises(InferenceServerError, match="already launched"):
        server.launch()


def _rpc_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("vllm-rpc-*"))


def test_the_servers_socket_folder_is_removed_when_it_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for vLLM: makes a socket-like file where vLLM puts its ZeroMQ sockets, then waits.
    fake = tmp_path / "fake_vllm.py"
    # The socket comes last: once it exists, everything else the stand-in writes is there too.
    fake.write_text("import os, pathlib, tempfile, time\n"
                    "pathlib.Path(tempfile.mkdtemp(prefix='vllm_dist_'), 'x').touch()\n"
                    "pathlib.Path(os.environ['TORCHINDUCTOR_CACHE_DIR']).mkdir(exist_ok=True)\n"
                    "pathlib.Path(os.environ['VLLM_RPC_BASE_PATH'], 'abc-socket').touch()\n"
                    "time.sleep(60)\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {fake}\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    server = InferenceServer(InferenceConfig(model="/m", port=8558), python=wrapper)
    server.launch()
    [folder] = _rpc_dirs(tmp_path)
    deadline = time.monotonic() + 10
    while not (folder / "abc-socket").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (folder / "abc-socket").exists()
    server.stop(grace=5)
    # Sockets and vLLM's own temporary folders went with the server; the compile cache stayed.
    assert _rpc_dirs(tmp_path) == [] and not list(tmp_path.glob("vllm_dist_*"))
    assert [p.name for p in tmp_path.glob("torchinductor_*")] == [f"torchinductor_{getpass.getuser()}"]


def test_a_server_that_dies_at_start_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(InferenceServerError, match="exited"):
        InferenceServer(InferenceConfig(model="/m", port=8560), python=sys.executable).start(timeout=60)
    assert _rpc_dirs(tmp_path) == []


def test_what_a_server_that_died_at_start_spawned_is_stopped_too(tmp_path: Path) -> None:
    # Like vLLM's engine process outliving an API server that crashed: a child in the server's group.
    pid_file = tmp_path / "child.pid"
    fake = tmp_path / "fake_vllm.py"
    fake.write_text("import subprocess, sys\n"
                    f"child = subprocess.Popen(['sleep', '120'])\nopen({str(pid_file)!r}, 'w').write(str(child.pid))\n"
                    "sys.exit(3)\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {fake}\n")
    wrapper.chmod(0o755)
    server = InferenceServer(InferenceConfig(model="/m", port=8561), python=wrapper)
    with pytest.raises(InferenceServerError, match="exited with code 3"):
        server.start(timeout=60)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
        if state == "Z":  # killed, waiting for init to reap it
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or state == "Z"
    server.stop()  # a second stop signals nothing (the group id may belong to someone else by now)


def test_a_folder_the_caller_names_is_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / "rpc"
    mine.mkdir()
    server = InferenceServer(InferenceConfig(model="/m", port=8559), python=sys.executable,
                             env={"VLLM_RPC_BASE_PATH": str(mine)})
    with pytest.raises(InferenceServerError, match="exited"):
        server.start(timeout=60)
    assert mine.is_dir()


def test_waiting_before_launching_is_an_error() -> None:
    with pytest.raises(InferenceServerError, match="launch"):
        InferenceServer(InferenceConfig(model="/m")).wait_ready(1)
