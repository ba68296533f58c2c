"""Starting trainer ranks on this machine with torchrun.

``torch.distributed.run`` (torchrun) starts ``nproc`` copies of a module and gives each its
``RANK``/``WORLD_SIZE``. The rendezvous is pinned to 127.0.0.1 on a free port: torchrun's
``--standalone`` uses the machine's host name, which need not resolve (it does not on
this project's machines, and torchrun then waits forever), and a free port lets
concurrent runs coexist. Several machines: run torchrun yourself on each
(``--nnodes``, ``--rdzv-endpoint``), or under Slurm ``srun torchrun ...``; see docs/trainer.md.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence

# OpenMP's idle threads spin by default. On a machine with no core to spare (the trainer beside vLLM, or a
# busy CI runner) two spinning threads once took 90 s for what one thread did in 16 s (forward and backward
# of 512 samples, 2 cores at load 12), while two passive threads took 6-11 s: docs/trainer.md, "Threads".
RANK_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def torchrun_command(module: str, args: Sequence[str], nproc: int, port: int | None = None) -> list[str]:
    """The command that runs ``python -m module *args`` on ``nproc`` local ranks."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
        "--master-addr=127.0.0.1", f"--master-port={port or free_port()}", "-m", module, *args,
    ]


def multinode_command(module: str, args: Sequence[str], nproc: int, nodes: int, rendezvous: str,
                      run_id: str) -> list[str]:
    """The command each of ``nodes`` machines runs for ``nproc`` ranks there, all meeting at ``rendezvous``
    (``HOST:PORT``, torchrun's c10d store, hosted by whichever node reaches it first); ``run_id`` keeps two
    runs on one rendezvous apart."""
    return [
        sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--nproc-per-node={nproc}",
        "--rdzv-backend=c10d", f"--rdzv-endpoint={rendezvous}", f"--rdzv-id={run_id}", "-m", module, *args,
    ]


def rank_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for trainer ranks: ``base`` (default: this process's) plus :data:`RANK_ENV` where unset."""
    env = dict(os.environ if base is None else base)
    for key, value in RANK_ENV.items():
        env.setdefault(key, value)
    return env


def default_threads(num_processes: int) -> int:
    """CPU threads per rank when the config leaves it unset: this machine's cores shared among the ranks."""
    return max(1, (os.cpu_count() or 1) // num_processes)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(module: str, args: Sequence[str], nproc: int) -> int:
    """Run the ranks to completion; returns torchrun's exit status."""
    return subprocess.run(torchrun_command(module, args, nproc), check=False, env=rank_environment()).returncode


__all__ = [
    "RANK_ENV", "default_threads", "free_port", "launch", "multinode_command", "rank_environment", "torchrun_command",
]
