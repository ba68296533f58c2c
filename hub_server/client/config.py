"""Where the ``vf-hub`` CLI finds the Hub and its token: flags, ``VF_HUB_URL``/``VF_HUB_TOKEN``, ``vf-hub login``."""

from __future__ import annotations

import json
import os
from pathlib import Path

DEFAULT_HUB_URL = "http://127.0.0.1:8000"


def config_file() -> Path:
    """``$XDG_CONFIG_HOME/vf-hub/credentials.json`` (``~/.config/vf-hub/...`` when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vf-hub" / "credentials.json"


def _saved() -> dict[str, str]:
    path = config_file()
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def hub_url(flag: str | None = None) -> str:
    """The Hub URL: the flag, else ``VF_HUB_URL``, else the one saved by login, else the local default."""
    return (flag or os.environ.get("VF_HUB_URL") or _saved().get("hub_url") or DEFAULT_HUB_URL).rstrip("/")


def hub_token(flag: str | None = None) -> str | None:
    """The API token: the flag, else ``VF_HUB_TOKEN``, else the one saved by ``vf-hub login``."""
    return flag or os.environ.get("VF_HUB_TOKEN") or _saved().get("token")


def save_login(url: str, token: str) -> Path:
    """Store the Hub URL and token for later commands, readable by the user only."""
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"hub_url": url, "token": token}, handle)
    return path
