"""A checkpoint as the relays hold it: a folder's files cut into fixed-size shards, each with its sha256.

The manifest is written before any shard, so a node can start fetching shards while the rest are still
being uploaded; it also carries the whole checkpoint's sha256 (all files' bytes in manifest order). The shard
hashes only prove the bytes are the manifest's, so the trainer signs the manifest (HMAC-SHA256 with the run
secret, :func:`sign_manifest`) and a node loads nothing whose manifest it cannot verify (:func:`verify_manifest`):
bytes someone else put on a relay are refused whatever they hash to::

    manifest = sign_manifest(build_manifest(Path("broadcasts/step_3"), step=3, shard_size=8 * 2**20), secret)
    verify_manifest(parse_manifest(raw), secret)
    data = read_shard(Path("broadcasts/step_3"), manifest.shards[0])
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from trainer_adapter.broadcast.errors import ManifestError

_SHA256 = r"^[0-9a-f]{64}$"
MANIFEST_NAME = "manifest.json"


class FileEntry(BaseModel):
    """One file of the checkpoint folder."""

    name: str = Field(description="file name inside the folder; no path separators")
    size: int = Field(ge=0)
    sha256: str = Field(pattern=_SHA256)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        # The fetcher writes files under its own folder by these names: a path here would escape it.
        if not name or "/" in name or "\\" in name or name in (".", "..") or "\x00" in name:
            raise ValueError(f"file name {name!r} is not a plain file name")
        return name


class ShardEntry(BaseModel):
    """A byte range of one file, fetched and verified on its own."""

    index: int = Field(ge=0)
    file: str
    offset: int = Field(ge=0)
    size: int = Field(ge=0)
    sha256: str = Field(pattern=_SHA256)


class Manifest(BaseModel):
    """Every shard of one checkpoint version, and the hashes that prove a download complete and intact."""

    format: Literal[1] = 1
    step: int = Field(ge=0, description="the trainer step the weights come from; versions are ordered by it")
    shard_size: int = Field(ge=1)
    files: list[FileEntry]
    shards: list[ShardEntry]
    checkpoint_sha256: str = Field(pattern=_SHA256)
    signature: str = Field("", description="HMAC-SHA256 (hex) of the rest of the manifest with the run secret")

    @model_validator(mode="after")
    def _shards_tile_the_files(self) -> Manifest:
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError("a file is listed twice")
        if [s.index for s in self.shards] != list(range(len(self.shards))):
            raise ValueError("shard indexes are not 0, 1, 2, ... in order")
        covered = dict.fromkeys(names, 0)
        for shard in self.shards:
            if shard.file not in covered:
                raise ValueError(f"shard {shard.index} names unknown file {shard.file!r}")
            if shard.offset != covered[shard.file] or not 0 < shard.size <= self.shard_size:
                raise ValueError(f"shard {shard.index} does not continue {shard.file!r} at byte {covered[shard.file]}")
            covered[shard.file] += shard.size
        for entry in self.files:
            if covered[entry.name] != entry.size:
                raise ValueError(f"the shards of {entry.name!r} cover {covered[entry.name]} of {entry.size} bytes")
        return self

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def file_sizes(self) -> dict[str, int]:
        return {f.name: f.size for f in self.files}


def parse_manifest(raw: bytes) -> Manifest:
    """A manifest from its JSON; anything else is a ``ManifestError`` naming the first problem."""
    try:
        return Manifest.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise ManifestError(f"bad manifest: {where}: {first['msg']}") from exc


def build_manifest(folder: Path, step: int, shard_size: int) -> Manifest:
    """Hash every regular file of ``folder`` (sorted by name) in one pass: per shard, per file and whole."""
    if shard_size < 1:
        raise ManifestError(f"shard_size must be >= 1, got {shard_size}")
    paths = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    if not paths:
        raise ManifestError(f"{folder} is not a folder with files in it")
    whole = hashlib.sha256()
    files: list[FileEntry] = []
    shards: list[ShardEntry] = []
    for path in paths:
        per_file = hashlib.sha256()
        offset = 0
        with path.open("rb") as fh:
            while chunk := fh.read(shard_size):
                per_file.update(chunk)
                whole.update(chunk)
                digest = hashlib.sha256(chunk).hexdigest()
                shards.append(ShardEntry(index=len(shards), file=path.name, offset=offset, size=len(chunk),
                                         sha256=digest))  # fmt: skip
                offset += len(chunk)
        files.append(FileEntry(name=path.name, size=offset, sha256=per_file.hexdigest()))
    return Manifest(step=step, shard_size=shard_size, files=files, shards=shards,
                    checkpoint_sha256=whole.hexdigest())  # fmt: skip


def _mac(manifest: Manifest, secret: str) -> str:
    signed = manifest.model_dump_json(exclude={"signature"}).encode()
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign_manifest(manifest: Manifest, secret: str) -> Manifest:
    """``manifest`` signed with the run secret."""
    return manifest.model_copy(update={"signature": _mac(manifest, secret)})


def verify_manifest(manifest: Manifest, secret: str) -> Manifest:
    """``manifest`` if the run secret signed it; otherwise a ``ManifestError`` (unsigned, or someone else's)."""
    if not manifest.signature:
        raise ManifestError(f"the manifest of step {manifest.step} is not signed: not this run's trainer's")
    if not hmac.compare_digest(manifest.signature, _mac(manifest, secret)):
        raise ManifestError(f"the manifest of step {manifest.step} has a signature this run's secret did not make")
    return manifest


def read_shard(folder: Path, shard: ShardEntry) -> bytes:
    """The bytes of one shard, read from the checkpoint folder the manifest was built from."""
    with (folder / shard.file).open("rb") as fh:
        fh.seek(shard.offset)
        return fh.read(shard.size)


__all__ = ["MANIFEST_NAME", "FileEntry", "Manifest", "ShardEntry", "build_manifest", "parse_manifest", "read_shard",
           "sign_manifest", "verify_manifest"]
