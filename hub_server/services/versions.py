"""Which version of a project an index, a card and a page show: pip's pick, in one place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import Version


@dataclass(frozen=True)
class VersionFacts:
    """What decides whether a version is the one an index picks."""

    version: str
    yanked: bool
    has_files: bool


def latest_of(versions: Iterable[VersionFacts]) -> str | None:
    """Newest non-yanked, non-pre-release version with files (else newest with files), as pip would pick."""
    ordered = sorted(versions, key=lambda v: Version(v.version))
    candidates = [v for v in ordered if v.has_files and not v.yanked]
    stable = [v for v in candidates if not Version(v.version).is_prerelease]
    pick = stable or candidates
    return pick[-1].version if pick else None


def shown_version(versions: Iterable[VersionFacts]) -> str | None:
    """The version a card and an environment page show: the latest, else the newest."""
    versions = list(versions)
    newest = max(versions, key=lambda v: Version(v.version), default=None)
    return latest_of(versions) or (newest.version if newest else None)
