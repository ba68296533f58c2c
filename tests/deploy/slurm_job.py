"""Running a ``deploy/slurm`` batch script as Slurm would, on this one machine: its nodes are local processes.

``standins/srun`` and ``standins/scontrol`` stand in for Slurm's (one copy of a step's command per node, every
node's host name 127.0.0.1); the script and everything it starts are the real ones.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STANDINS = Path(__file__).resolve().parent / "standins"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sbatch(script: str, *args: str, nodes: int, settings: dict[str, str] | None = None,
           timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``script`` run as its job's batch step: on the first node, with the job's variables and ``settings``."""
    env = {**os.environ, "PATH": f"{STANDINS}:{os.environ['PATH']}", "SLURM_JOB_NUM_NODES": str(nodes),
           "SLURM_JOB_NODELIST": f"node[0-{nodes - 1}]", "SLURM_JOB_ID": "4242", "SLURM_SUBMIT_DIR": str(ROOT),
           "VENV": str(Path(sys.executable).parent.parent), "OMP_NUM_THREADS": "1", **(settings or {})}
    return subprocess.run(["bash", str(ROOT / "deploy" / "slurm" / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
