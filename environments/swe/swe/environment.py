"""swe: fix a real bug in a small real Python project, in a sandbox, until its failing tests pass.

Each instance is a pristine project (inflection, semver or toolz, from their PyPI sdists) with one bug
made by mutating its source; the prompt is an issue made from the failing tests' output. The model has
``bash`` and ``edit_file`` in a sandbox holding the buggy repository at ``/workspace/repo``.

A good answer changes the project's code so that every FAIL_TO_PASS test passes and every PASS_TO_PASS
test still passes; that is reward 1, anything else 0. The tests run inside the sandbox after the rollout,
in a fresh copy of the pristine tree holding only the model's library changes. A sandbox that fails (it
cannot start, dies, or the grading cannot run) is an infrastructure error: the rollout carries the
``SandboxError`` in ``state["error"]`` instead of a score.
"""

from __future__ import annotations

import asyncio
import posixpath
from typing import Any

from datasets import Dataset

import verifiers as vf
from swe.image import instance_image
from swe.instances import read_instances
from swe.sandbox_repo import PYTEST_DIR, REPO, prepare_repository, run_instance_tests
from verifiers.envs.sandbox_env import SandboxEnv, SandboxState
from verifiers.errors import SandboxError, UsageError
from verifiers.sandboxes import CreateSandboxRequest
from verifiers.sandboxes.errors import SandboxFileNotFoundError, SandboxFileTooLargeError, SandboxPathError

SYSTEM_PROMPT = (
    "You are a software engineer fixing a bug in a Python repository inside a Linux sandbox without network. "
    "Use the bash tool to read code and run tests, and edit_file to change files. The tests are correct: fix "
    "the library code, not the tests. Stop calling tools when the failing tests pass."
)
_MAX_FILE_BYTES = 1_000_000


def issue_text(instance: dict[str, Any]) -> str:
    """The prompt: where the repository is, which tests fail, and how they fail (never the fix)."""
    failing = "\n".join(f"- {test_id}" for test_id in instance["FAIL_TO_PASS"])
    return (
        f"The repository of the Python project `{instance['project']}` ({instance['version']}) is at {REPO} "
        f"(your commands start there). Some of its tests fail:\n\n{failing}\n\n"
        f"Test output (`python3 -m pytest <test id>` runs a test):\n\n```\n{instance['failure_output']}\n```\n\n"
        "Find the bug in the project's code and fix it, without breaking the other tests."
    )


def build_dataset(instances: list[dict[str, Any]]) -> Dataset:
    return Dataset.from_list([
        {"question": issue_text(row), "answer": row["fix_patch"], "task": "swe",
         "info": {key: row[key] for key in ("instance_id", "project", "version", "file", "function", "mutation",
                                            "bug_patch", "FAIL_TO_PASS", "PASS_TO_PASS")}}
        for row in instances
    ])


def resolve_repo_path(path: str) -> str | None:
    """``path`` (absolute, or relative to the repository) as an absolute path inside it; None when outside."""
    full = posixpath.normpath(posixpath.join(REPO, path))
    return full if full.startswith(REPO + "/") else None


class SweEnv(SandboxEnv):
    """A ``SandboxEnv`` whose sandbox holds the instance's buggy repository; graded by its tests."""

    def __init__(self, timeout_per_test_run_seconds: float = 120.0, **kwargs: Any) -> None:
        kwargs.setdefault("sandbox_name", "swe")
        kwargs.setdefault("memory_gb", 1)
        kwargs.setdefault("disk_size_gb", 0.5)
        kwargs.setdefault("environment_vars", {"PYTHONPATH": PYTEST_DIR, "PYTHONDONTWRITEBYTECODE": "1"})
        super().__init__(**kwargs)
        self.timeout_per_test_run_seconds = timeout_per_test_run_seconds
        self._repos: dict[str, asyncio.Task[None]] = {}
        self.add_tool(self.edit_file, args_to_skip=["sandbox_id", "sandbox_state"])

    async def setup_state(self, state: vf.State, **kwargs: Any) -> vf.State:
        """Start putting the repository in place while the model writes its first turn."""
        # The image is built once per instance and process (milliseconds); a failure is a SandboxError.
        state["swe_image"] = await asyncio.to_thread(instance_image, state["info"])
        state = await super().setup_state(state, **kwargs)
        state["working_dir"] = REPO
        state["swe"] = {}
        self._repos[state["sandbox_id"]] = asyncio.ensure_future(self._prepare(state))
        return state

    def get_sandbox_request(self, state: vf.State) -> CreateSandboxRequest:
        """The configured sandbox, with the instance's image at ``/image``."""
        return super().get_sandbox_request(state).model_copy(update={"image_dir": state["swe_image"]})

    async def _prepare(self, state: vf.State) -> None:
        await self.wait_for_sandbox(state["sandbox_id"], state["sandbox_state"])
        await prepare_repository(self.sandbox_client, state["sandbox_id"])

    async def repository_ready(self, sandbox_id: str) -> None:
        """Wait for the repository (raises the setup's SandboxError, which ends the rollout as an error)."""
        task = self._repos.get(sandbox_id)
        if task is not None:
            await task

    def update_tool_args(self, tool_name: str, tool_args: dict[str, Any], messages: Any, state: vf.State,
                         **kwargs: Any) -> dict[str, Any]:
        if tool_name == "edit_file":
            return {**tool_args, "sandbox_id": state["sandbox_id"], "sandbox_state": state["sandbox_state"]}
        return super().update_tool_args(tool_name, tool_args, messages, state, **kwargs)

    async def bash(self, command: str, sandbox_id: str, sandbox_state: SandboxState,
                   working_dir: str | None = None) -> str:
        """Run a bash command in the sandbox (Linux, no network), starting in the repository, and see its output.

        Args:
            command: the bash command line to run, e.g. `python3 -m pytest tests/test_x.py -x` or `cat file.py`.
        """
        await self.repository_ready(sandbox_id)
        return await super().bash(command, sandbox_id, sandbox_state, working_dir)

    async def edit_file(self, path: str, old: str, new: str, sandbox_id: str, sandbox_state: SandboxState) -> str:
        """Replace one exact occurrence of `old` with `new` in a file of the repository.

        Args:
            path: the file, relative to the repository root (or absolute, inside the repository).
            old: the exact text to replace; it must occur exactly once in the file.
            new: the text to put in its place.
        """
        await self.repository_ready(sandbox_id)
        full = resolve_repo_path(path) if isinstance(path, str) and path else None
        if full is None:
            return f"Error: {path!r} is not a file path inside the repository ({REPO})."
        if not isinstance(old, str) or not old:
            return "Error: old must be the non-empty text to replace."
        if not isinstance(new, str):
            return "Error: new must be text."
        try:
            content = (await self.sandbox_client.read_file(sandbox_id, full, max_bytes=_MAX_FILE_BYTES)).content
        except SandboxFileNotFoundError:
            return f"Error: no file {path!r} in the repository."
        except SandboxFileTooLargeError:
            return f"Error: {path!r} is larger than {_MAX_FILE_BYTES} bytes; edit it with bash."
        except (SandboxPathError, IsADirectoryError):
            return f"Error: {path!r} is not a regular file inside the repository."
        count = content.count(old)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            return (f"Error: old {where} in {path}; it must occur exactly once "
                    "(add surrounding lines to make it unique).")
        await self.sandbox_client.upload_bytes(sandbox_id, full, content.replace(old, new, 1).encode())
        line = content[:content.index(old)].count("\n") + 1
        return f"Edited {path}: replaced {old.count(chr(10)) + 1} line(s) at line {line}."

    async def post_rollout(self, state: vf.State) -> None:
        """Run FAIL_TO_PASS + PASS_TO_PASS in the sandbox; a sandbox failure becomes the rollout's error."""
        sandbox_id = state["sandbox_id"]
        try:
            if state.get("error") is not None:
                return
            await self.repository_ready(sandbox_id)
            result = await run_instance_tests(self.sandbox_client, sandbox_id, state["info"],
                                              self.timeout_per_test_run_seconds)
            state["swe"] = result.as_dict()
        except SandboxError as error:
            state["error"] = error  # infrastructure, not the model: counted, and masked by consumers
            self.logger.warning("swe sandbox failed for %s: %r", state["info"]["instance_id"], error)
        finally:
            task = self._repos.pop(sandbox_id, None)
            if task is not None and not task.done():
                task.cancel()


def _share(values: list[bool]) -> float:
    return sum(values) / len(values) if values else 1.0


def solved(state: vf.State) -> float:
    """1.0 when every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes."""
    return float(bool((state.get("swe") or {}).get("resolved")))


def fail_to_pass(state: vf.State) -> float:
    """Share of the FAIL_TO_PASS tests that pass after the rollout."""
    result = state.get("swe") or {}
    return _share(result["fail_to_pass"]) if "fail_to_pass" in result else 0.0


def pass_to_pass(state: vf.State) -> float:
    """Share of the PASS_TO_PASS tests that still pass after the rollout."""
    result = state.get("swe") or {}
    return _share(result["pass_to_pass"]) if "pass_to_pass" in result else 0.0


def sandbox_failed(state: vf.State) -> float:
    """1.0 when the sandbox failed (the rollout carries the error instead of a score)."""
    return float(isinstance(state.get("error"), SandboxError))


def make_rubric() -> vf.Rubric:
    """``solved`` is the reward; the test shares and ``sandbox_failed`` are metrics."""
    return vf.Rubric(funcs=[solved, fail_to_pass, pass_to_pass, sandbox_failed], weights=[1.0, 0.0, 0.0, 0.0])


def load_environment(num_train_examples: int = -1, num_eval_examples: int = -1, max_turns: int = 30,
                     timeout_per_command_seconds: float = 60.0, timeout_per_test_run_seconds: float = 120.0,
                     system_prompt: str = SYSTEM_PROMPT) -> vf.Environment:
    """Build the swe environment: train on the ``train`` split, evaluate on the disjoint ``eval`` split.

    Args:
        num_train_examples: use the first N training instances (-1 = all).
        num_eval_examples: use the first N evaluation instances (-1 = all).
        max_turns: model turns per rollout (each may call tools).
        timeout_per_command_seconds: a `bash` call running longer is killed and reported as timed out.
        timeout_per_test_run_seconds: wall-clock limit of the grading test run after the rollout.
        system_prompt: the instruction before each issue.
    """
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if not isinstance(value, int) or isinstance(value, bool) or value == 0 or value < -1:
            raise UsageError(f"{name} must be -1 (all) or a positive integer; got {value!r}")
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
        raise UsageError(f"max_turns must be a positive integer; got {max_turns!r}")
    for name, seconds in (("timeout_per_command_seconds", timeout_per_command_seconds),
                          ("timeout_per_test_run_seconds", timeout_per_test_run_seconds)):
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
            raise UsageError(f"{name} must be a positive number of seconds; got {seconds!r}")
    if not isinstance(system_prompt, str):
        raise UsageError(f"system_prompt must be a string; got {type(system_prompt).__name__}")
    train, evaluation = read_instances("train"), read_instances("eval")
    train = train if num_train_examples == -1 else train[:num_train_examples]
    evaluation = evaluation if num_eval_examples == -1 else evaluation[:num_eval_examples]
    return SweEnv(dataset=build_dataset(train), eval_dataset=build_dataset(evaluation), system_prompt=system_prompt,
                  rubric=make_rubric(), max_turns=max_turns,
                  timeout_per_command_seconds=float(timeout_per_command_seconds),
                  timeout_per_test_run_seconds=float(timeout_per_test_run_seconds))
