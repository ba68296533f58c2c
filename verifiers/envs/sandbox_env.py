"""``SandboxEnv``: a ``bash`` tool that runs the model's commands in a sandbox of its own per rollout.

The sandbox is asked for in ``setup_state`` and not waited for: it starts
while the model writes its first turn, and the first ``bash`` call waits for
readiness (the wait is the ``sandbox_ready_wait_time`` metric). It is deleted
when the rollout ends (a ``@vf.cleanup`` handler, after the overridable
``post_rollout``); whatever is left when the environment is torn down, the
process exits or receives SIGTERM is deleted then. A sandbox that fails ends
the rollout with a ``SandboxError`` in ``state["error"]`` (an infrastructure
failure, never the model's fault); a command that times out is the model's
problem and is answered in words.

Example::

    env = vf.SandboxEnv(dataset=ds, rubric=rubric, timeout_per_command_seconds=10, max_turns=8)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from typing_extensions import TypedDict  # pydantic builds tool schemas from it on Python < 3.12

from verifiers.awaitables import maybe_await
from verifiers.decorators import cleanup, teardown
from verifiers.envs.stateful_tool_env import StatefulToolEnv
from verifiers.errors import SandboxError
from verifiers.sandboxes import AsyncSandboxClient, CommandResponse, CommandTimeoutError, CreateSandboxRequest
from verifiers.sandboxes.errors import SandboxNotRunningError
from verifiers.state import State

logger = logging.getLogger("verifiers.envs.SandboxEnv")

_KEEP_ALIVE = "tail -f /dev/null"  # hosted containers' idle command; an agent keeps ours alive


class SandboxState(TypedDict):
    """Per-rollout sandbox bookkeeping, in ``state["sandbox_state"]``."""

    ready: bool
    ready_wait_time: float
    command_execution_times: list[float]


def format_command_output(result: CommandResponse) -> str:
    """What the model reads: stdout, then ``stderr:`` and stderr, or ``(no output)``; plus how it ended."""
    stdout, stderr = result.stdout.strip(), (result.stderr or "").strip()
    text = stdout
    if stderr:
        text = f"{text}\nstderr:\n{stderr}" if text else f"stderr:\n{stderr}"
    notes = []
    if result.oom_killed:
        notes.append("the command was killed: out of memory")
    if result.truncated:
        notes.append("output truncated")
    if notes:
        text = f"{text}\n({'; '.join(notes)})" if text else f"({'; '.join(notes)})"
    return text or "(no output)"


class SandboxEnv(StatefulToolEnv):
    """A tool environment whose ``bash`` tool runs in an isolated sandbox per rollout.

    Args:
        sandbox_name, docker_image, start_command, cpu_cores, memory_gb, disk_size_gb, gpu_count,
        timeout_minutes, environment_vars, labels: the sandbox each rollout gets (see
            :class:`~verifiers.sandboxes.CreateSandboxRequest`; the local backend runs the host's
            ``/usr`` whatever the image).
        network_access: let sandboxes reach the network (off by default).
        timeout_per_command_seconds: a ``bash`` call running longer is killed and reported as timed out.
        sandbox_client: where sandboxes come from (default: the local backend).
    """

    def __init__(self, sandbox_name: str = "sandbox-env", docker_image: str = "python:3.11-slim",
                 start_command: str | None = None, cpu_cores: float = 1, memory_gb: float = 2,
                 disk_size_gb: float = 5, gpu_count: int = 0, timeout_minutes: float = 60,
                 timeout_per_command_seconds: float = 30, environment_vars: dict[str, str] | None = None,
                 labels: list[str] | None = None, network_access: bool = False,
                 sandbox_client: AsyncSandboxClient | None = None, **kwargs: Any) -> None:
        # A failing sandbox ends the rollout (an infrastructure error, masked), not the model's feedback.
        kwargs["stop_errors"] = (SandboxError, *kwargs.get("stop_errors", ()))
        super().__init__(**kwargs)
        self.timeout_per_command_seconds = timeout_per_command_seconds
        self.sandbox_client = sandbox_client or AsyncSandboxClient()
        self.sandbox_request = CreateSandboxRequest(
            name=sandbox_name, docker_image=docker_image,
            start_command=None if start_command == _KEEP_ALIVE else start_command,
            cpu_cores=cpu_cores, memory_gb=memory_gb, disk_size_gb=disk_size_gb, gpu_count=gpu_count,
            timeout_minutes=timeout_minutes, environment_vars=environment_vars or {}, labels=labels or [],
            network_access=network_access,
        )
        self.active_sandboxes: set[str] = set()
        self.add_tool(self.bash, args_to_skip=["sandbox_id", "sandbox_state", "working_dir"])

    # -- hooks --------------------------------------------------------------------------------

    def get_sandbox_request(self, state: State) -> CreateSandboxRequest:
        """The sandbox for this rollout; override to vary it per example."""
        return self.sandbox_request.model_copy(deep=True)

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        """Ask for the rollout's sandbox without waiting for it."""
        sandbox = await self.sandbox_client.create(self.get_sandbox_request(state))
        self.active_sandboxes.add(sandbox.id)
        state["sandbox_id"] = sandbox.id
        state["sandbox_state"] = SandboxState(ready=False, ready_wait_time=0.0, command_execution_times=[])
        return await maybe_await(super().setup_state, state, **kwargs) or state

    async def post_rollout(self, state: State) -> None:
        """Runs before the sandbox is deleted: read what the reward needs from it here."""

    def update_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any, state: State,
                         **kwargs: Any) -> dict[str, Any]:
        if tool_name != "bash":
            return tool_args
        return {**tool_args, "sandbox_id": state["sandbox_id"], "sandbox_state": state["sandbox_state"],
                "working_dir": state.get("working_dir")}

    # -- the tool -----------------------------------------------------------------------------

    async def wait_for_sandbox(self, sandbox_id: str, sandbox_state: SandboxState) -> None:
        """Wait once per rollout for the sandbox, recording how long it took."""
        if sandbox_state["ready"]:
            return
        started = time.perf_counter()
        await self.sandbox_client.wait_for_creation(sandbox_id)
        sandbox_state["ready"] = True
        sandbox_state["ready_wait_time"] = time.perf_counter() - started

    async def run_command(self, sandbox_id: str, sandbox_state: SandboxState, command: str,
                          working_dir: str | None = None, timeout: float | None = None) -> CommandResponse:
        """Run ``command`` and time it; CommandTimeoutError after ``timeout`` (default: per-command timeout)."""
        await self.wait_for_sandbox(sandbox_id, sandbox_state)
        seconds = self.timeout_per_command_seconds if timeout is None else timeout
        started = time.perf_counter()
        try:
            return await self.sandbox_client.execute_command(sandbox_id, command, working_dir=working_dir,
                                                             timeout=seconds)
        finally:
            sandbox_state["command_execution_times"].append(time.perf_counter() - started)

    async def bash(self, command: str, sandbox_id: str, sandbox_state: SandboxState,
                   working_dir: str | None = None) -> str:
        """Run a bash command in your sandbox (a persistent Linux machine without network) and see its output.

        Args:
            command: the bash command line to run.
        """
        try:
            result = await self.run_command(sandbox_id, sandbox_state, command, working_dir)
        except CommandTimeoutError:
            return f"Error: Command timed out after {self.timeout_per_command_seconds}s"
        return format_command_output(result)

    # -- the end ------------------------------------------------------------------------------

    @cleanup
    async def destroy_sandbox(self, state: State) -> None:
        """Delete the rollout's sandbox once it is over (after :meth:`post_rollout`)."""
        sandbox_id = state.get("sandbox_id")
        if sandbox_id is None:
            return
        try:
            await self.post_rollout(state)
        finally:
            try:
                await self.sandbox_client.delete(sandbox_id)
            except SandboxNotRunningError:
                pass  # already gone: it failed, or its lifetime ended
            self.active_sandboxes.discard(sandbox_id)

    @teardown
    async def teardown_sandboxes(self) -> None:
        """Delete every sandbox a rollout left behind (once, after all rollouts)."""
        if self.active_sandboxes:
            logger.info("deleting %d remaining sandboxes", len(self.active_sandboxes))
            ids, self.active_sandboxes = list(self.active_sandboxes), set()
            for sandbox_id in ids:
                try:
                    await self.sandbox_client.delete(sandbox_id)
                except SandboxNotRunningError:
                    pass

    def monitor_metrics(self, state: State) -> dict[str, float]:
        """Adds ``sandbox_ready_wait_time`` and the mean ``sandbox_command_execution_time`` (seconds)."""
        sandbox_state = state.get("sandbox_state") or {}
        times = sandbox_state.get("command_execution_times") or []
        return {
            **super().monitor_metrics(state),
            "sandbox_ready_wait_time": float(sandbox_state.get("ready_wait_time", 0.0)),
            "sandbox_command_execution_time": sum(times) / len(times) if times else 0.0,
        }


__all__ = ["SandboxEnv", "SandboxState", "format_command_output"]
