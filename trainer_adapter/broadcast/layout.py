"""Where a version's files live on a relay (the same paths on every relay)::

    /latest.json                 {"step": 7}: the newest version whose manifest is up (written after it)
    /7/manifest.json             the manifest (written before the shards, so nodes can start early)
    /7/0.shard, /7/1.shard, ...  the shards; a relay shows each only once whole (nginx renames a finished PUT)
"""

from __future__ import annotations

LATEST = "latest.json"


def version_dir(step: int) -> str:
    """The version's folder, with the trailing slash WebDAV's DELETE of a collection needs."""
    return f"{step}/"


def manifest_path(step: int) -> str:
    return f"{step}/manifest.json"


def shard_path(step: int, index: int) -> str:
    return f"{step}/{index}.shard"


__all__ = ["LATEST", "manifest_path", "shard_path", "version_dir"]
