"""Checking an uploaded distribution: its filename, and the core metadata inside the archive.

Only wheels and ``.tar.gz`` sdists are accepted (what PEP 517 builds produce). The wheel's
``*.dist-info/METADATA`` is kept verbatim: it is served as the PEP 658 ``.metadata`` file.
"""

from __future__ import annotations

import gzip
import re
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

# packaging's ExceptionGroup is the builtin on Python >= 3.11 and its own stand-in before.
from packaging.metadata import ExceptionGroup, Metadata, parse_email
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from hub_server.bounded_stream import BoundedReader
from hub_server.errors import BadRequest
from hub_server.names import check_version, normalize

WHEEL = "bdist_wheel"
SDIST = "sdist"
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]*")
_MAX_METADATA_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_UNPACKED = 128 * 1024 * 1024  # Settings.max_sdist_unpacked_size's default
MAX_SDIST_MEMBERS = 100_000  # what `vf-hub pull` accepts; tar headers are 512 bytes, so also a CPU bound


@dataclass(frozen=True)
class Filename:
    """A distribution filename split into its parts."""

    filename: str
    packagetype: str
    name: str  # PEP 503 normalised
    version: Version


@dataclass(frozen=True)
class CoreMetadata:
    """The parts of the core metadata the Hub stores and shows."""

    raw: bytes
    name: str  # PEP 503 normalised
    display_name: str  # as the author spelled it
    version: Version
    requires_python: str | None
    summary: str
    description: str
    description_content_type: str
    keywords: str


def parse_filename(filename: str) -> Filename:
    """Check and split a distribution filename; :class:`BadRequest` says why it is refused."""
    if len(filename) > 255 or not _FILENAME.fullmatch(filename) or ".." in filename:
        raise BadRequest(f"invalid distribution filename {filename!r}: a plain file name is required")
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
            packagetype = WHEEL
        elif filename.endswith(".tar.gz"):
            name, version = parse_sdist_filename(filename)
            packagetype = SDIST
        else:
            raise BadRequest(f"invalid distribution filename {filename!r}: only .whl and .tar.gz files are accepted")
    except (InvalidWheelFilename, InvalidSdistFilename) as error:
        raise BadRequest(f"invalid distribution filename {filename!r}: {error}") from None
    check_version(str(version))
    return Filename(filename, packagetype, normalize(name), version)


def _parse_metadata(raw: bytes, where: str) -> CoreMetadata:
    try:
        meta = Metadata.from_email(raw, validate=True)
    except ExceptionGroup as group:
        reasons = "; ".join(str(e) for e in group.exceptions)
        raise BadRequest(f"invalid core metadata in {where}: {reasons}") from None
    except ValueError as error:
        raise BadRequest(f"invalid core metadata in {where}: {error}") from None
    return CoreMetadata(
        raw=raw,
        name=normalize(meta.name),
        display_name=meta.name,
        version=meta.version,
        # As the author wrote it (validated above): str(SpecifierSet) would reorder the clauses.
        requires_python=(parse_email(raw)[0].get("requires_python") or "").strip() or None,
        summary=(meta.summary or "")[:512],
        description=meta.description or "",
        description_content_type=meta.description_content_type or "",
        keywords=",".join(meta.keywords or [])[:1000],
    )


def _wheel_metadata(path: Path, parsed: Filename) -> bytes:
    try:
        with zipfile.ZipFile(path) as archive:
            candidates = [
                info for info in archive.infolist()
                if re.fullmatch(r"[^/]+\.dist-info/METADATA", info.filename)
            ]
            if len(candidates) != 1:
                raise BadRequest(
                    f"{parsed.filename} must contain exactly one *.dist-info/METADATA, found {len(candidates)}")
            info = candidates[0]
            stem = info.filename.split("/", 1)[0].removesuffix(".dist-info")
            dist_name, _, dist_version = stem.rpartition("-")
            if normalize(dist_name) != parsed.name or check_version(dist_version) != parsed.version:
                raise BadRequest(f"{parsed.filename}: its .dist-info folder {stem!r} names another project or version")
            if info.file_size > _MAX_METADATA_BYTES:
                raise BadRequest(f"{parsed.filename}: METADATA is too large")
            return archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        raise BadRequest(f"{parsed.filename} is not a valid wheel (zip archive): {error}") from None


def _pkg_info(archive: tarfile.TarFile, parsed: Filename, wanted: str) -> bytes:
    """Read ``wanted`` out of a tar stream, reading (within its bounds) every member to the end."""
    found: bytes | None = None
    for count, member in enumerate(archive, start=1):
        if count > MAX_SDIST_MEMBERS:
            raise BadRequest(f"{parsed.filename} has more than {MAX_SDIST_MEMBERS} members")
        if member.name != wanted:
            continue
        if found is not None:
            raise BadRequest(f"{parsed.filename} contains {wanted} more than once")
        if not member.isfile() or member.size > _MAX_METADATA_BYTES:
            raise BadRequest(f"{parsed.filename}: {wanted} is not a regular file of sane size")
        handle = archive.extractfile(member)
        assert handle is not None  # a regular file
        found = handle.read()
    if found is None:
        raise BadRequest(f"{parsed.filename} must contain {wanted}")
    return found


def _sdist_metadata(path: Path, parsed: Filename, max_unpacked: int) -> bytes:
    top = parsed.filename.removesuffix(".tar.gz")
    # Streamed ("r|"), through a cap on the bytes decompressed: a gzip bomb is refused after `max_unpacked`
    # bytes, not after unpacking all of it (reading a tar's index means decompressing the whole archive).
    try:
        with gzip.open(path, "rb") as unzipped:
            bounded = BoundedReader(unzipped, max_unpacked, f"{parsed.filename} unpacked")
            with tarfile.open(fileobj=bounded, mode="r|") as archive:
                return _pkg_info(archive, parsed, f"{top}/PKG-INFO")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise BadRequest(f"{parsed.filename} is not a valid sdist (.tar.gz archive): {error}") from None


def read_metadata(path: Path, parsed: Filename, max_unpacked: int = DEFAULT_MAX_UNPACKED) -> CoreMetadata:
    """The core metadata inside the archive at ``path``, checked against its filename.

    An sdist is read through at most ``max_unpacked`` decompressed bytes (then :class:`TooLarge`).
    """
    if parsed.packagetype == WHEEL:
        raw = _wheel_metadata(path, parsed)
    else:
        raw = _sdist_metadata(path, parsed, max_unpacked)
    meta = _parse_metadata(raw, parsed.filename)
    if meta.name != parsed.name:
        raise BadRequest(f"{parsed.filename}: metadata names the project {meta.name!r}, the filename {parsed.name!r}")
    if meta.version != parsed.version:
        raise BadRequest(
            f"{parsed.filename}: metadata version {meta.version} does not match the filename's {parsed.version}")
    return meta
