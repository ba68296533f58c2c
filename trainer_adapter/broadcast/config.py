"""The ``broadcast`` table of a run's config: relays instead of a shared folder between trainer and inference.

Without it (``relays`` empty) weights go through the shared ``broadcasts/`` folder as before::

    [broadcast]
    relays = ["http://10.0.0.5:8101/", "http://10.0.0.6:8101/", "http://10.0.0.7:8101/"]
    keep_versions = 3
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator


class BroadcastConfig(BaseModel):
    """How the trainer publishes weights to relays and how each inference node fetches them."""

    model_config = ConfigDict(extra="forbid")

    relays: list[str] = Field(
        default_factory=list,
        description="base URLs of the relay servers (nginx with WebDAV PUT, scripts/setup_nginx.sh); "
        "empty: weights go through the shared filesystem",
    )
    keep_versions: int = Field(3, ge=1, description="versions each relay keeps; the publisher deletes older ones")
    shard_bytes: int = Field(8 * 2**20, ge=4096, description="size of one shard, the unit of fetch and sha256 check")
    upload_concurrency: int = Field(4, ge=1, description="shards the trainer uploads at once (each to every relay)")
    fetch_concurrency: int = Field(8, ge=1, description="shards an inference node downloads at once")
    poll_interval_s: float = Field(0.2, gt=0, description="wait between polls for a version or shard not there yet")
    shard_timeout_s: float = Field(300.0, gt=0, description="how long a node waits for a missing shard before failing")
    load_timeout_s: float = Field(
        600.0, gt=0, description="how long the orchestrator waits for a server's follower to load a published "
        "version (its GET /weights names it) before that server counts as down")
    exploration: float = Field(
        0.1, ge=0, le=1, description="share of shard fetches sent to a uniformly drawn relay, to re-measure them"
    )
    fetch_dir: Path = Field(
        Path("/tmp/vf-weights"), description="local folder where each node assembles the versions it fetches"
    )

    @field_validator("relays")
    @classmethod
    def _http_urls(cls, relays: list[str]) -> list[str]:
        for url in relays:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"relay {url!r} is not an http:// or https:// URL with a host")
        if len(set(relays)) != len(relays):
            raise ValueError("a relay is listed twice")
        return [u if u.endswith("/") else u + "/" for u in relays]

    @property
    def enabled(self) -> bool:
        return bool(self.relays)


__all__ = ["BroadcastConfig"]
