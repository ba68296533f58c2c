"""``vf-hub install OWNER/NAME[@VERSION]``: the exact version, from the Hub, with pip or uv.

The command lines come from :mod:`hub_server.install_commands` (see there why PyPI cannot win).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hub_server.client.api import HubClient
from hub_server.errors import BadRequest, NotFound
from hub_server.install_commands import InstallTarget, pick_file, pip_command, uv_command
from hub_server.names import EnvRef

INSTALLERS = ("uv", "pip")


def resolve_target(client: HubClient, ref: EnvRef) -> InstallTarget:
    """The version to install (the requested one, else the latest) and the file pip should fetch."""
    info: dict[str, Any] = client.info(ref.owner, ref.name)
    version = ref.version or info.get("latest")
    if version is None:
        raise NotFound(f"{ref} has no installable version yet")
    release = next((v for v in info["versions"] if v["version"] == version), None)
    if release is None or not release["files"]:
        known = ", ".join(v["version"] for v in info["versions"]) or "none"
        raise NotFound(f"{ref.owner}/{ref.name} has no version {version} (versions: {known})")
    chosen = pick_file([f["filename"] for f in release["files"]])
    file = next((f for f in release["files"] if f["filename"] == chosen), None)
    if file is None:
        raise BadRequest(f"{ref} has only platform-specific wheels; install it with --with uv")
    return InstallTarget(client.url, info["owner"], info["name"], version, file["url"], file["sha256"],
                         private=bool(info["private"]))


def install_command(target: InstallTarget, installer: str, token: str | None, python: str) -> list[str]:
    """The full command line that installs ``target`` into the interpreter ``python``.

    The token goes into the URLs only for a private project (public files need none).
    """
    token = token if target.private else None
    if installer == "pip":
        # This interpreter's pip, aimed at the target (pip >= 22.3): the target venv may have no pip of its own.
        return [sys.executable, "-m", "pip", "--python", python, *pip_command(target, token)[3:]]
    if installer == "uv":
        command = uv_command(target, token, python)
        beside = Path(sys.executable).parent / "uv"
        uv = shutil.which("uv") or (str(beside) if beside.is_file() else None)
        if uv is None:
            raise BadRequest("uv, the default installer, is not installed here (not on PATH nor beside this "
                             "Python): install it (pip install uv) or use --with pip")
        # uv takes any installed copy of NAME==VERSION as done (an editable checkout of it too); the user asked for
        # the Hub's. (pip reinstalls by itself: its requirement is a direct URL, which the installed copy's is not.)
        return [uv, *command[1:], "--reinstall-package", target.name]
    raise BadRequest(f"installer must be one of {', '.join(INSTALLERS)}, not {installer!r}")


def run_install(command: list[str]) -> None:
    """Run an install command, raising :class:`BadRequest` with its output when it fails."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BadRequest(f"install failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def redact(command: list[str], token: str | None) -> str:
    """The command as one line with the token masked, for printing."""
    line = " ".join(command)
    return line.replace(quote(token, safe=""), "****").replace(token, "****") if token else line
