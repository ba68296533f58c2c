"""``vf-hub pull OWNER/NAME[@VERSION]``: download a version's source distribution and unpack it safely.

The sdist is untrusted input. It is checked against the sha256 the Hub lists, and unpacked
only if every member is a plain file or folder inside one top-level folder: absolute paths,
``..``, links, devices and oversized archives are refused before anything is written. The
files land in a temporary folder beside the destination, which is renamed into place at the
end, so a refused or interrupted pull leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from hub_server.client.api import HubClient
from hub_server.errors import BadRequest, HubError, NotFound
from hub_server.names import EnvRef

MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 100_000


def _sdist_entry(info: dict[str, Any], ref: EnvRef) -> tuple[str, dict[str, Any]]:
    version = ref.version or info.get("latest") or (info["versions"][-1]["version"] if info["versions"] else None)
    release = next((v for v in info["versions"] if v["version"] == version), None)
    if release is None:
        known = ", ".join(v["version"] for v in info["versions"]) or "none"
        raise NotFound(f"{ref.owner}/{ref.name} has no version {ref.version or '(any)'} (versions: {known})")
    sdist = next((f for f in release["files"] if f["packagetype"] == "sdist"), None)
    if sdist is None:
        raise NotFound(f"{ref.owner}/{ref.name}@{version} has no source distribution (sdist) to pull")
    return str(version), sdist


def _download(client: HubClient, url: str, sha256: str, target: Path) -> None:
    headers = {"Authorization": f"Bearer {client.token}"} if client.token else {}
    digest = hashlib.sha256()
    with httpx.Client(base_url=client.url, headers=headers, timeout=httpx.Timeout(30.0, read=300.0),
                      follow_redirects=True) as http, http.stream("GET", url) as response:
        if response.status_code != 200:
            raise HubError(f"downloading {url} failed: HTTP {response.status_code}")
        with open(target, "wb") as handle:
            for chunk in response.iter_bytes():
                digest.update(chunk)
                handle.write(chunk)
    if digest.hexdigest() != sha256:
        raise BadRequest(f"the downloaded file does not match its sha256 {sha256}; nothing was unpacked")


def _checked_members(archive: tarfile.TarFile) -> tuple[str, list[tarfile.TarInfo]]:
    """The single top-level folder and the members, after refusing anything unsafe."""
    members: list[tarfile.TarInfo] = []
    tops: set[str] = set()
    total = 0
    for member in archive:
        if len(members) >= MAX_MEMBERS:
            raise BadRequest(f"the sdist has more than {MAX_MEMBERS} members; refusing to unpack it")
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts or "\\" in member.name or not path.parts:
            raise BadRequest(f"unsafe path in the sdist: {member.name!r}; refusing to unpack it")
        if not (member.isfile() or member.isdir()):
            raise BadRequest(f"the sdist member {member.name!r} is a link or special file; refusing to unpack it")
        total += member.size
        if total > MAX_UNPACKED_BYTES:
            raise BadRequest(f"the sdist unpacks to more than {MAX_UNPACKED_BYTES} bytes; refusing to unpack it")
        tops.add(path.parts[0])
        members.append(member)
    if len(tops) != 1:
        raise BadRequest(f"an sdist must hold one top-level folder, this one has {len(tops)}")
    return tops.pop(), members


def unpack_sdist(archive_path: Path, dest: Path) -> Path:
    """Unpack the sdist's top-level folder as ``dest`` (which must not exist yet)."""
    if dest.exists():
        raise BadRequest(f"{dest} already exists; remove it or choose another --dest")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".vf-hub-pull-", dir=dest.parent))
    try:
        try:
            with tarfile.open(archive_path, "r:gz") as archive:
                top, members = _checked_members(archive)
                if hasattr(tarfile, "data_filter"):  # the stdlib's own guard as a second line (3.10.12+)
                    archive.extractall(staging, members=members, filter="data")
                else:
                    archive.extractall(staging, members=members)  # noqa: S202 - members checked above
        except (tarfile.TarError, EOFError, OSError) as error:
            raise BadRequest(f"the sdist could not be unpacked: {error}") from None
        os.replace(staging / top, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def pull(client: HubClient, ref: EnvRef, dest: Path | None = None) -> tuple[str, Path]:
    """Download ``ref``'s sdist (the latest version when none is named) and unpack it; returns (version, folder)."""
    info = client.info(ref.owner, ref.name)
    version, sdist = _sdist_entry(info, ref)
    target = dest or Path.cwd() / f"{info['name']}-{version}"
    with tempfile.TemporaryDirectory(prefix="vf-hub-pull-") as scratch:
        archive = Path(scratch) / sdist["filename"]
        _download(client, sdist["url"], sdist["sha256"], archive)
        return version, unpack_sdist(archive, target)
