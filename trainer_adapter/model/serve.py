"""``vf-train serve MODEL``: one vLLM server on a prepared catalog model (or any model folder), for a newcomer.

It resolves the model (a catalog name must have been prepared: ``vf-train model prepare NAME``), starts
vLLM on CPU from the vLLM venv with the project's weight routes and the ``hermes`` tool-call parser (the
catalog's templates write ``<tool_call>`` blocks), waits until it answers, prints the OpenAI base URL and
the model name to send, and serves until Ctrl-C or SIGTERM, then stops vLLM's whole process group.

    vf-train serve smollm2-135m-instruct --port 8000
    vf-eval reverse-text -m smollm2-135m-instruct -b http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.catalog import CATALOG
from trainer_adapter.model.chat_template import check_chat_template
from trainer_adapter.model.config import check_model_folder
from trainer_adapter.model.prepare import prepared_path


class ServeConfig(BaseModel):
    """``vf-train serve``: which model, where it listens, and the vLLM settings worth changing by hand."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="A prepared catalog model (vf-train model list) or a Hugging Face model folder.")
    port: int = Field(8000, ge=1, le=65535, description="Port to listen on.")
    host: str = Field("127.0.0.1", description="Address to listen on (0.0.0.0 exposes it to the network).")
    served_name: str | None = Field(
        None, min_length=1, description="The model name clients send; default: the catalog name or the folder's name.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "float32", description="Weights and activations: float32 on CPU (logprobs as the trainer computes them).")
    max_model_len: int = Field(2048, gt=0, description="Longest prompt + completion, in tokens.")
    max_num_seqs: int = Field(64, gt=0, description="Sequences decoded at once.")
    tool_call_parser: str | None = Field(
        "hermes", min_length=1, description="vLLM's tool-call parser ('hermes' reads the catalog templates' "
        "<tool_call> blocks); empty string: tool calls stay text.")
    vllm_python: Path = Field(Path(".venv-vllm/bin/python"), description="Interpreter with vLLM (setup_vllm_cpu.sh).")
    start_timeout_s: float = Field(600.0, gt=0, description="Give up when vLLM is not ready after this.")


def resolve_model(model: str) -> tuple[Path, str]:
    """``(folder, default served name)`` of a catalog name (prepared) or a model folder; a usage error otherwise."""
    if model in CATALOG:
        return prepared_path(model), model
    folder = Path(model)
    if not folder.is_dir():
        known = ", ".join(sorted(CATALOG))
        raise TrainerConfigError(f"model {model!r} is neither a catalog model ({known}) nor a folder")
    check_model_folder(folder)
    check_chat_template(folder)
    return folder, folder.resolve().name


def serve(config: ServeConfig, say: Callable[[str], None] = print) -> int:
    """Start the server, print where it answers, block until a signal; returns the exit status."""
    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer

    folder, name = resolve_model(config.model)
    if not config.vllm_python.is_file():
        raise TrainerConfigError(f"no vLLM interpreter at {config.vllm_python}: run bash scripts/setup_vllm_cpu.sh")
    served = config.served_name or name
    settings = InferenceConfig(
        model=str(folder), served_model_name=served, host=config.host, port=config.port, dtype=config.dtype,
        max_model_len=config.max_model_len, max_num_seqs=config.max_num_seqs,
        tool_call_parser=config.tool_call_parser or None)  # fmt: skip
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    # vLLM runs in its own session (so stop() can end its whole group); die_with_parent makes it end with this
    # process too, even when this one is killed with SIGKILL and never reaches stop()
    server = InferenceServer(settings, python=config.vllm_python, die_with_parent=True)
    try:
        server.launch()
        server.wait_ready(config.start_timeout_s)
        say(f"READY {server.base_url}  model: {served}  ({folder})")
        say("Ctrl-C stops it.")
        while not stop.wait(1.0):
            if server.process is not None and server.process.poll() is not None:
                say(f"vLLM exited with code {server.process.returncode}")
                return 1
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


__all__ = ["ServeConfig", "resolve_model", "serve"]
