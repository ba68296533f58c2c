"""``deploy/slurm/sft.sbatch`` run as Slurm would run it on two nodes, here two local torchrun processes
(``tests/deploy/slurm_job.py``): two torchrun agents meet at a c10d rendezvous and train one model with a rank
each. Its weights must be the very weights of one torchrun with two ranks on one node (same world size, same
data order).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.deploy.slurm_job import ROOT, free_port, sbatch
from trainer_adapter.train.export import WEIGHTS_FILE

pytestmark = pytest.mark.slow

# one rank per node, at a rendezvous port of its own
ONE_RANK = {"GPUS_PER_NODE": "1", "RDZV_PORT": str(free_port())}
SFT = """
max_steps = 6
output_dir = "OUT"
log_every = 3
[data]
env = "arithmetic"
env_args = {num_train_examples = 200, num_eval_examples = 0}
batch_size = 8
"""


def _config(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(SFT.replace("OUT", str(tmp_path / name)))
    return path


def test_two_nodes_train_what_one_node_with_two_ranks_trains(tmp_path: Path) -> None:
    done = sbatch("sft.sbatch", str(_config(tmp_path, "two_nodes")), nodes=2, settings=ONE_RANK)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    one_node = subprocess.run(
        [sys.executable, "-m", "trainer_adapter.cli.vf_train", "sft", str(_config(tmp_path, "one_node")),
         "--num-processes", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert one_node.returncode == 0, one_node.stdout[-3000:] + one_node.stderr[-3000:]
    got = load_file(tmp_path / "two_nodes" / "weights" / "step_6" / WEIGHTS_FILE)
    expected = load_file(tmp_path / "one_node" / "weights" / "step_6" / WEIGHTS_FILE)
    assert got.keys() == expected.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-6, msg=name)


def test_a_node_that_fails_fails_the_job(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(SFT.replace("OUT", str(tmp_path / "bad")).replace('env = "arithmetic"', 'env = "no-such-env"'))
    done = sbatch("sft.sbatch", str(config), nodes=2, settings=ONE_RANK)
    assert done.returncode != 0
    assert "no-such-env" in done.stdout + done.stderr


def test_the_script_says_how_to_call_it() -> None:
    done = sbatch("sft.sbatch", nodes=2)
    assert done.returncode == 2 and "usage: sbatch --nodes N deploy/slurm/sft.sbatch" in done.stderr
