"""Running ``inside.py`` on one uploaded wheel in a fresh sandbox: no network, a time limit, a log tail.

The sandbox (the SDK's own local backend) gets the check image read-only at ``/image``; a fresh venv
layered over the image's SDK installs the wheel with pip from no index (the image's ``wheels`` folder
only), then ``inside.py`` runs and prints its JSON report as its last line. The report counts only if it
carries the nonce this run gave ``inside.py``'s supervisor, which the package's process never sees (see
``inside.py``): a line the package prints is not a report.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.sandboxes import AsyncSandboxClient, CommandTimeoutError, CreateSandboxRequest, SandboxError

INSIDE = Path(__file__).with_name("inside.py")
LOG_TAIL = 4000
_VENV = ("python3 -m venv --without-pip /workspace/venv && /workspace/venv/bin/python -c 'import pathlib, sysconfig; "
         "pathlib.Path(sysconfig.get_paths()[\"purelib\"], \"_check_image.pth\").write_text(\"/image/site-packages\")'")
_PIP = ("/workspace/venv/bin/python -m pip install --no-index --find-links /image/wheels --no-cache-dir "
        "--disable-pip-version-check --no-input -q /workspace/{wheel}")


@dataclass
class SandboxOutcome:
    """What happened: ``report`` is inside.py's JSON (None if it never printed one); ``problem`` says why not."""

    report: dict[str, Any] | None
    log_tail: str
    timings: dict[str, float] = field(default_factory=dict)
    problem: str | None = None  # "timeout: ...", "install: ...", "sandbox: ..." (the check could not finish)
    infrastructure: bool = False  # the sandbox itself failed: not the package's fault


def _tail(*texts: str) -> str:
    return "\n".join(t for t in texts if t)[-LOG_TAIL:]


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


async def run_check(client: AsyncSandboxClient, image: Path, wheel: Path, request: dict[str, Any],
                    time_limit_s: float, memory_gb: float = 2.0) -> SandboxOutcome:
    """Install ``wheel`` in a sandbox over ``image`` and run ``inside.py`` with ``request``."""
    timings: dict[str, float] = {}
    deadline = _Deadline(time_limit_s)
    started = time.perf_counter()
    try:
        box = await client.create(CreateSandboxRequest(
            name="hub-check", memory_gb=memory_gb, disk_size_gb=2.0, network_access=False, image_dir=str(image),
            timeout_minutes=max(1.0, time_limit_s / 60 + 1), labels=["hub-check"]))
    except SandboxError as error:
        return SandboxOutcome(None, "", timings, f"sandbox: {error}", infrastructure=True)
    try:
        await client.wait_for_creation(box.id, timeout=deadline.left())
        timings["sandbox_s"] = round(time.perf_counter() - started, 3)
        await client.upload_bytes(box.id, wheel.name, wheel.read_bytes())
        await client.upload_bytes(box.id, "inside.py", INSIDE.read_bytes())
        nonce = secrets.token_hex(16)
        await client.upload_bytes(box.id, "request.json", json.dumps({**request, "nonce": nonce}).encode())
        step = time.perf_counter()
        install = await client.execute_command(box.id, f"{_VENV} && {_PIP.format(wheel=wheel.name)}",
                                               timeout=int(deadline.left()))
        timings["install_s"] = round(time.perf_counter() - step, 3)
        if install.exit_code != 0:
            return SandboxOutcome(None, _tail(install.stdout, install.stderr), timings,
                                  f"install: pip could not install {wheel.name} (exit {install.exit_code})")
        step = time.perf_counter()
        done = await client.execute_command(box.id, "/workspace/venv/bin/python /workspace/inside.py request.json",
                                            timeout=int(deadline.left()))
        timings["run_s"] = round(time.perf_counter() - step, 3)
    except CommandTimeoutError as error:
        partial = error.response
        log = _tail(partial.stdout, partial.stderr) if partial is not None else ""
        return SandboxOutcome(None, log, timings, f"timeout: the check ran past its limit of {time_limit_s:g} s")
    except SandboxError as error:
        return SandboxOutcome(None, "", timings, f"sandbox: {error}", infrastructure=True)
    finally:
        await client.delete(box.id)
    timings["total_s"] = round(time.perf_counter() - started, 3)
    log = _tail(done.stdout, done.stderr)
    lines = done.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        report = None
    if isinstance(report, dict) and not secrets.compare_digest(str(report.pop("nonce", "")), nonce):
        report = None  # a line someone else printed
    if not isinstance(report, dict):
        return SandboxOutcome(None, log, timings, f"crash: the check program ended (exit {done.exit_code}, "
                              f"{'OOM-killed' if done.oom_killed else 'no report'}) without its report")
    return SandboxOutcome(report, log, timings)
