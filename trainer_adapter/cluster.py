"""An RL run over several machines: the roles each node plays (docs/cluster.md; how they find each other is
:mod:`trainer_adapter.rendezvous`).

One node (the head) runs ``vf-train rl CONFIG`` as on one machine, with ``trainer.num_nodes``,
``trainer.rendezvous`` and ``inference.urls`` set. The other nodes run one role each::

    python -m trainer_adapter.cluster trainer-node RUN_DIR --launch-id ID     # more trainer ranks
    python -m trainer_adapter.cluster inference RUN_DIR --launch-id ID        # a vLLM server (in vLLM's venv)

``RUN_DIR`` is the run's ``output_dir`` on storage every node sees (batches, weights and checkpoints pass
through it). A node waits until the head has written the run's initial weights and the trainer's config for
*this* launch — the head writes ``launch_id`` last, with ``$VF_LAUNCH_ID`` (the Slurm job id in
``deploy/slurm/rl.sbatch``) — so that a resumed run's nodes never start from the files of an earlier launch. Then
it reads ``run_config.json`` and becomes its role: a trainer node execs torchrun with the head's command (same
c10d rendezvous, same ranks per node), an inference node execs vLLM on ``RUN_DIR/base`` with the run's
``[inference]`` settings; the head loads every server with the weights the run starts from once it answers.
When the run has relays (``[broadcast]``), the inference role first starts the server's follower
(``python -m trainer_adapter.broadcast.node``, into ``fetch_dir/port_<port>`` on this node), which goes down
with the server: that node's weights come from the relays, not from ``RUN_DIR``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from trainer_adapter.errors import TrainerError
from trainer_adapter.rendezvous import LAUNCH_ID_ENV, wait_for_launch
from trainer_adapter.rl_run import follower_command, trainer_command


def _run_config(root: Path) -> Any:
    from trainer_adapter.resume import RUN_CONFIG
    from trainer_adapter.rl_config import RLRunConfig

    return RLRunConfig.model_validate_json((root / RUN_CONFIG).read_text())


app = typer.Typer(add_completion=False, help="Roles of the nodes of an RL run over several machines.")
RunDir = Annotated[Path, typer.Argument(help="The run's output_dir, on storage every node sees.")]
LaunchId = Annotated[str, typer.Option(help=f"This launch's id: the head's ${LAUNCH_ID_ENV}.")]
Timeout = Annotated[float, typer.Option(help="Seconds to wait for the head before giving up.")]


@app.command("trainer-node")
def trainer_node(run_dir: RunDir, launch_id: LaunchId, timeout: Timeout = 3600.0) -> None:
    """Become one more node of the run's trainer: torchrun with the head's rendezvous and ranks per node."""
    from trainer_adapter.train.launch import rank_environment

    wait_for_launch(run_dir, launch_id, timeout)
    config = _run_config(run_dir)
    if config.trainer.num_nodes < 2:
        raise typer.BadParameter(f"the run in {run_dir} has trainer.num_nodes = 1: it needs no trainer node")
    command = trainer_command(config, launch_id)
    os.execve(command[0], command, rank_environment())


@app.command("inference")
def inference(run_dir: RunDir, launch_id: LaunchId, timeout: Timeout = 3600.0,
              host: Annotated[str, typer.Option(help="Address the server listens on (0.0.0.0: every interface, "
                                                    "which a server other nodes use needs).")] = "127.0.0.1",
              port: Annotated[int, typer.Option(min=1, max=65535, help="Its port.")] = 8000) -> None:
    """Become one of the run's vLLM servers (run it with vLLM's interpreter), on the run's initial weights;
    with relays, beside a follower that loads every version the relays announce."""
    import subprocess

    from trainer_adapter.inference.run_secret import RUN_SECRET_VAR, run_secret
    from trainer_adapter.inference.vllm_server import InferenceServer
    from trainer_adapter.lifeline import parent_death_signal

    if run_secret() is None:
        raise typer.BadParameter(f"{RUN_SECRET_VAR} is not set: the trainer's weight updates need the run secret "
                                 "(deploy/slurm/rl.sbatch exports one per job)")
    wait_for_launch(run_dir, launch_id, timeout)
    config = _run_config(run_dir)
    settings = config.inference.server_config(run_dir / "base", config.orchestrator.model_name, port)
    server = InferenceServer(settings.model_copy(update={"host": host}))
    if config.broadcast.enabled:
        # Started before the exec: this pid becomes vLLM's, so the follower's parent-death signal ties it to vLLM.
        fetch_dir = config.broadcast.fetch_dir.resolve() / f"port_{port}"
        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # a wildcard address is not one to connect to
        subprocess.Popen(follower_command(config.broadcast, fetch_dir, f"http://{local}:{port}/v1"),
                         preexec_fn=parent_death_signal())  # fmt: skip
    os.environ.update(server.config.env())
    command = server.command()
    os.execv(command[0], command)


def main(argv: list[str] | None = None) -> None:
    """``python -m trainer_adapter.cluster``; errors are one line and exit 1."""
    try:
        app(args=argv if argv is not None else sys.argv[1:], standalone_mode=True)
    except TrainerError as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()

__all__ = ["app", "inference", "main", "trainer_node"]
