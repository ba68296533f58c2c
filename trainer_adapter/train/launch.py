"""Starting trainer ranks on this machine with torchrun.

``torch.distributed.run`` (torchrun) starts ``nproc`` copies of a module and gives each its
``RANK``/``WORLD_SIZE``. The rendezvous is pinned to 127.0.0.1 on a free port: torchrun's
``--standalone`` uses the machine's host name, which need not resolve (it does not on
this project's machines, and torchrun then waits forever), and a free port lets
concurrent runs coexist. Several machines: run torchrun yourself on each
(``--nnodes``, ``--rdzv-endpoint``), or under Slurm ``srun torchrun ...``; see docs/trainer.md.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Sequence


def torchrun_command(module: str, args: Sequence[str], nproc: int, port: int | None = None) -> list[str]:
    """The command that runs ``python -m module *args`` on ``nproc`` local ranks."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
        "--master-addr=127.0.0.1", f"--master-port={port or free_port()}", "-m", module, *args,
    ]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(module: str, args: Sequence[str], nproc: int) -> int:
    """Run the ranks to completion; returns torchrun's exit status."""
    return subprocess.run(torchrun_command(module, args, nproc), check=False).returncode


__all__ = ["free_port", "launch", "torchrun_command"]
