"""Hand-made distribution files for tests: byte-for-byte deterministic wheels and sdists, in milliseconds.

Real builds (``python -m build``) are used where the build itself is what is tested (``vf-hub push``).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

_DATE = (2020, 1, 1, 0, 0, 0)


def metadata_text(name: str, version: str, *, requires_python: str | None = None, requires: tuple[str, ...] = (),
                  summary: str = "A test environment.", description: str = "# Demo\n\nHello.\n",
                  keywords: str = "test,demo") -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}",
             f"Keywords: {keywords}", "Description-Content-Type: text/markdown"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n" + description


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(out: Path, name: str, version: str, *, body: str = "VALUE = 1\n", metadata: str | None = None,
               dist_info_name: str | None = None, **meta: object) -> Path:
    """A pure-Python wheel ``<name>-<version>-py3-none-any.whl`` with one module named like the project."""
    escaped = name.replace("-", "_").replace(".", "_")
    info = f"{dist_info_name or escaped}-{version}.dist-info"
    files = {
        f"{escaped}/__init__.py": body.encode(),
        f"{info}/METADATA": (metadata or metadata_text(name, version, **meta)).encode(),  # type: ignore[arg-type]
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join([*(_record_line(p, d) for p, d in files.items()), f"{info}/RECORD,,"]) + "\n"
    files[f"{info}/RECORD"] = record.encode()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{escaped}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            archive.writestr(zipfile.ZipInfo(member, _DATE), data)
    return path


def make_sdist(out: Path, name: str, version: str, **meta: object) -> Path:
    """A ``.tar.gz`` sdist with PKG-INFO and a pyproject.toml."""
    escaped = name.replace("-", "_").replace(".", "_").lower()
    top = f"{escaped}-{version}"
    members = {
        f"{top}/PKG-INFO": metadata_text(name, version, **meta).encode(),  # type: ignore[arg-type]
        f"{top}/pyproject.toml": f'[project]\nname = "{name}"\nversion = "{version}"\n'.encode(),
        f"{top}/{escaped}/__init__.py": b"VALUE = 1\n",
    }
    return tar_gz(out / f"{top}.tar.gz", members)


def tar_gz(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    """A ``.tar.gz`` holding ``members`` (name -> bytes) and symlinks (name -> target)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, data in members.items():
            entry = tarfile.TarInfo(name)
            entry.size, entry.mtime = len(data), 0
            archive.addfile(entry, io.BytesIO(data))
        for name, target in (links or {}).items():
            entry = tarfile.TarInfo(name)
            entry.type, entry.linkname = tarfile.SYMTYPE, target
            archive.addfile(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) as packed:
        packed.write(raw.getvalue())
    return path


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, produced as they are read (a bomb's payload never sits in memory)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        view = memoryview(buffer)  # type: ignore[arg-type]
        count = min(len(view), self.left)
        view[:count] = bytes(count)
        self.left -= count
        return count


def make_gzip_bomb(out: Path, name: str, version: str, unpacked: int, *, extra_pkg_info: bool = False) -> Path:
    """A valid sdist whose PKG-INFO comes first, then a member of ``unpacked`` zero bytes (about 1000:1)."""
    escaped = name.replace("-", "_").replace(".", "_").lower()
    top = f"{escaped}-{version}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{top}.tar.gz"
    pkg_info = metadata_text(name, version).encode()
    with open(path, "wb") as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0, compresslevel=1) as packed, \
            tarfile.open(fileobj=packed, mode="w|") as archive:
        for member, size, data in [(f"{top}/PKG-INFO", len(pkg_info), io.BytesIO(pkg_info)),
                                   (f"{top}/data.bin", unpacked, _Zeros(unpacked))]:
            entry = tarfile.TarInfo(member)
            entry.size, entry.mtime = size, 0
            archive.addfile(entry, data)
        if extra_pkg_info:
            entry = tarfile.TarInfo(f"{top}/PKG-INFO")
            entry.size = len(pkg_info)
            archive.addfile(entry, io.BytesIO(pkg_info))
    return path


def digests(path: Path) -> dict[str, str]:
    """The digest fields twine would send for ``path``."""
    data = path.read_bytes()
    return {"sha256_digest": hashlib.sha256(data).hexdigest(),
            "blake2_256_digest": hashlib.blake2b(data, digest_size=32).hexdigest(),
            "md5_digest": hashlib.md5(data).hexdigest()}


def upload_form(path: Path, name: str, version: str, **overrides: str) -> dict[str, str]:
    """The text fields of a twine upload of ``path``."""
    filetype = "bdist_wheel" if path.name.endswith(".whl") else "sdist"
    return {":action": "file_upload", "protocol_version": "1", "name": name, "version": version,
            "filetype": filetype, **digests(path), **overrides}
