"""Manifests: built from a folder in one pass, and refused when they do not describe a checkpoint."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.trainer_adapter.broadcast.conftest import make_checkpoint
from trainer_adapter.broadcast.errors import ManifestError
from trainer_adapter.broadcast.manifest import build_manifest, parse_manifest, read_shard


def test_shards_tile_every_file_and_the_hashes_are_those_of_the_bytes(tmp_path: Path) -> None:
    folder = make_checkpoint(tmp_path / "ckpt", 0, {"b.bin": 2500, "a.json": 1000, "empty": 0})
    manifest = build_manifest(folder, step=4, shard_size=1000)
    assert [f.name for f in manifest.files] == ["a.json", "b.bin", "empty"]
    assert [(s.file, s.offset, s.size) for s in manifest.shards] == [
        ("a.json", 0, 1000), ("b.bin", 0, 1000), ("b.bin", 1000, 1000), ("b.bin", 2000, 500),
    ]  # fmt: skip
    for shard in manifest.shards:
        assert hashlib.sha256(read_shard(folder, shard)).hexdigest() == shard.sha256
    everything = b"".join((folder / n).read_bytes() for n in ("a.json", "b.bin", "empty"))
    assert manifest.checkpoint_sha256 == hashlib.sha256(everything).hexdigest()
    assert manifest.total_bytes == 3500
    assert parse_manifest(manifest.model_dump_json().encode()) == manifest


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m["files"][0].update(name="../escape"), "is not a plain file name"),
        (lambda m: m["shards"].pop(1), "shard indexes are not"),
        (lambda m: m["shards"][1].update(offset=10), "does not continue 'b.bin' at byte 0"),
        (lambda m: m["files"][1].update(size=9999), "cover 2500 of 9999 bytes"),
        (lambda m: m["shards"][0].update(file="other"), "names unknown file 'other'"),
        (lambda m: m.update(checkpoint_sha256="xyz"), "checkpoint_sha256"),
        (lambda m: m.update(step=-1), "step"),
    ],
)
def test_a_manifest_that_does_not_describe_a_checkpoint_is_refused(tmp_path: Path, change, message: str) -> None:
    folder = make_checkpoint(tmp_path / "ckpt", 0, {"b.bin": 2500, "a.json": 1000})
    data = build_manifest(folder, step=1, shard_size=1000).model_dump()
    change(data)
    with pytest.raises(ManifestError, match=message):
        parse_manifest(json.dumps(data).encode())


def test_unparseable_input_and_empty_folders_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="bad manifest"):
        parse_manifest(b"<html>")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ManifestError, match="not a folder with files in it"):
        build_manifest(tmp_path / "empty", step=0, shard_size=10)
    with pytest.raises(ManifestError, match="not a folder with files in it"):
        build_manifest(tmp_path / "nowhere", step=0, shard_size=10)
    with pytest.raises(ManifestError, match="shard_size must be >= 1"):
        build_manifest(tmp_path, step=0, shard_size=0)
