"""The Hub's one settings object: every knob, its default and why, read from ``VF_HUB_*``.

``Settings()`` reads the environment (``VF_HUB_DATABASE_URL``, ``VF_HUB_STORAGE_URL``, ...);
``vf-hub serve`` builds its options from these fields, so ``--help`` shows the same text.
The default is self-contained: a SQLite file and a blob folder under ``data_dir``.
The scale path is the same code with ``database_url=postgresql+psycopg://...`` and
``storage_url=s3://bucket/prefix`` (several app workers may share them).
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MIB = 1024 * 1024


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/vf-hub`` (``~/.local/share/vf-hub`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "vf-hub"


class Settings(BaseSettings):
    """Configuration of one Hub deployment (all app workers of it share these values)."""

    model_config = SettingsConfigDict(env_prefix="VF_HUB_", extra="forbid")

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Folder for the default SQLite database, blob folder and staging files.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the database; default sqlite:///<data_dir>/hub.sqlite3.",
    )
    storage_url: str | None = Field(
        default=None,
        description="Where blobs live: a folder path, a file:// URL or s3://BUCKET[/PREFIX][?endpoint_url=URL"
        "&region=NAME&presign=SECONDS] (credentials: boto3's usual AWS_* variables); default <data_dir>/blobs.",
    )
    public_url: str | None = Field(
        default=None,
        description="Base URL users reach the Hub at, for install commands; default: the request's own URL.",
    )
    max_file_size: int = Field(
        default=100 * MIB,
        gt=0,
        description="Largest accepted upload in bytes (PyPI's default is 100 MiB); enforced while streaming.",
    )
    max_form_field_size: int = Field(
        default=4 * MIB,
        gt=0,
        description="Largest text field of an upload form (long READMEs travel as the description field).",
    )
    max_sdist_unpacked_size: int = Field(
        default=128 * MIB,
        gt=0,
        description="Most bytes an uploaded sdist may unpack to while the Hub reads its PKG-INFO (a gzip bomb "
        "is refused once it gets there, at ~3 ms of CPU per MiB); then 400.",
    )
    token_ttl_days: int = Field(
        default=365,
        gt=0,
        description="Lifetime of tokens created without an explicit expiry, in days.",
    )
    write_rate_per_minute: int = Field(
        default=120,
        gt=0,
        description="Uploads and other writes one principal may make per minute (all app workers together); "
        "then 429.",
    )
    failed_auth_per_minute: int = Field(
        default=30,
        gt=0,
        description="Failed authentications per minute allowed to one client address, and separately to one "
        "token id (all app workers together); then 429 for further failures. A valid token is never refused.",
    )
    forwarded_allow_ips: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Addresses or networks of the reverse proxies whose X-Forwarded-For/-Proto are believed "
        "(comma-separated, e.g. 127.0.0.1,10.0.0.0/8); default none: the client is the connecting address.",
    )
    reserved_names: list[str] = Field(
        default_factory=lambda: ["verifiers", "pip", "setuptools", "wheel", "numpy", "torch", "openai", "requests"],
        description="Project names nobody may register (names the Hub's users install from PyPI).",
    )
    read_cache_seconds: float = Field(
        default=1.0,
        ge=0,
        description="How long a worker may reuse an anonymous read (simple pages, 404s, file lookups); its own "
        "writes drop the cache at once, so this bounds how long another worker's change takes to show. 0: off.",
    )
    metrics: bool = Field(
        default=True,
        description="Serve Prometheus metrics at GET /metrics on the Hub's own port: requests and latency by route "
        "template, uploads, downloads, auth failures (docs/observability.md). Counts only, no names or addresses; "
        "false: no such route.",
    )
    simple_cache_seconds: int = Field(
        default=60,
        ge=0,
        description="Cache-Control max-age of /simple/ pages; files are immutable and cached for a year.",
    )
    accel_redirect: str | None = Field(
        default=None,
        description="Behind nginx: its internal location that maps onto the blob folder (e.g. /_blobs/). Whole "
        "downloads of local blobs too large to keep in memory are then answered with X-Accel-Redirect and nginx "
        "sends the bytes (docs/hub.md, Scale path); default none: the Hub streams them itself.",
    )

    @field_validator("forwarded_allow_ips", mode="before")
    @classmethod
    def _split_addresses(cls, value: Any) -> Any:
        # VF_HUB_FORWARDED_ALLOW_IPS and --forwarded-allow-ips are comma-separated, as uvicorn's own option
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _check_addresses(cls, value: list[str]) -> list[str]:
        checked = []
        for entry in value:
            try:
                checked.append(str(ipaddress.ip_network(entry, strict=False)))
            except ValueError:
                raise ValueError(f"forwarded_allow_ips: {entry!r} is not an IP address or network "
                                 "(e.g. 10.0.0.1 or 10.0.0.0/8)") from None
        return checked

    @field_validator("accel_redirect")
    @classmethod
    def _check_accel_prefix(cls, value: str | None) -> str | None:
        # the blob's key is appended as it is: the prefix must be an absolute path ending in a slash
        if value is not None and (not re.fullmatch(r"/(?:[A-Za-z0-9._~-]+/)+", value)
                                  or {".", ".."} & set(value.split("/"))):
            raise ValueError(f"accel_redirect: {value!r} is not a location path like /_blobs/ (letters, digits, "
                             "'._~-' segments other than . and .., starting and ending with /)")
        return value

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to a SQLite file in ``data_dir``."""
        return self.database_url or f"sqlite:///{self.data_dir / 'hub.sqlite3'}"

    def resolved_storage_url(self) -> str:
        """The storage URL, defaulting to a blob folder in ``data_dir``."""
        return self.storage_url or str(self.data_dir / "blobs")
