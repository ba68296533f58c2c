"""What an environment says about itself: tags, arguments, metrics and eval defaults.

Read from the ``[tool.verifiers]`` table of the ``pyproject.toml`` inside the version's sdist
(the table ``vf-init`` writes) and from the README's "Environment Arguments" and "Metrics"
tables; the pyproject names the entries and describes them, the README adds types, defaults
and weights. Packages without an sdist or a table show what their README has. The Hub never
runs the package: this is text read from archives and metadata.
"""

from __future__ import annotations

import sys
import tarfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: verifiers-hub installs the backport
    import tomli as tomllib

from packaging.version import InvalidVersion
from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.db.models import Project, Release
from hub_server.errors import StorageError
from hub_server.names import release_key
from hub_server.services.readme_tables import ReadmeTables
from hub_server.storage import Storage, blob_key

_MAX_PYPROJECT_BYTES = 256 * 1024
_MAX_MEMBERS_SCANNED = 5000
_MAX_ENTRIES = 100
_MAX_TEXT = 1000
_MAX_TAGS = 30


@dataclass(frozen=True)
class Argument:
    """An argument of ``load_environment``."""

    name: str
    type: str = ""
    default: str = ""
    description: str = ""


@dataclass(frozen=True)
class Metric:
    """A reward function or tracked metric of the environment's rubric."""

    name: str
    weight: str = ""
    description: str = ""


@dataclass(frozen=True)
class EnvironmentDetails:
    """Everything an environment page shows beyond the core metadata."""

    tags: tuple[str, ...] = ()
    arguments: tuple[Argument, ...] = ()
    metrics: tuple[Metric, ...] = ()
    # [tool.verifiers.eval] as the package wrote it, e.g. ("num_examples", 20): unchecked, since
    # anyone who publishes writes it (hub_server.eval_command checks each value before showing it)
    eval_defaults: tuple[tuple[str, str | int | float | bool], ...] = ()


def _text(value: Any, limit: int = _MAX_TEXT) -> str:
    return " ".join(str(value).split())[:limit] if value is not None else ""


def _read_member(archive: tarfile.TarFile, wanted: str) -> bytes | None:
    # Walk the headers instead of getmember(): it stops at the file and bounds the work on odd archives.
    for scanned, member in enumerate(archive):
        if scanned >= _MAX_MEMBERS_SCANNED:
            return None
        if member.name == wanted:
            if not member.isfile() or member.size > _MAX_PYPROJECT_BYTES:
                return None
            handle = archive.extractfile(member)
            return handle.read() if handle else None
    return None


class _PyprojectCache:
    """Parsed pyproject tables by the sdist's sha256: a blob never changes under its content address."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, sha256: str) -> tuple[bool, dict[str, Any] | None]:
        with self._lock:
            if sha256 not in self._items:
                return False, None
            self._items.move_to_end(sha256)
            return True, self._items[sha256]

    def put(self, sha256: str, value: dict[str, Any] | None) -> None:
        with self._lock:
            self._items[sha256] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_CACHE = _PyprojectCache()


class PyprojectError(ValueError):
    """A stored sdist's ``pyproject.toml`` exists but cannot be read (not UTF-8, not TOML, nested too deep)."""


def read_sdist_pyproject(storage: Storage, sha256: str, filename: str) -> dict[str, Any] | None:
    """The parsed ``pyproject.toml`` of a stored sdist, ``None`` if it has none; :class:`PyprojectError` if it
    has one that cannot be read (the check fails such a package), :class:`StorageError` on storage trouble."""
    top = filename.removesuffix(".tar.gz")
    try:
        with storage.open(blob_key(sha256)) as blob, tarfile.open(fileobj=blob, mode="r:gz") as archive:
            raw = _read_member(archive, f"{top}/pyproject.toml")
    except (tarfile.TarError, EOFError) as error:
        raise PyprojectError(f"the sdist cannot be read: {error}") from None
    if raw is None:
        return None
    try:
        return tomllib.loads(raw.decode())
    except UnicodeDecodeError as error:
        raise PyprojectError(f"its pyproject.toml is not UTF-8: {error.reason}") from None
    except tomllib.TOMLDecodeError as error:
        raise PyprojectError(f"its pyproject.toml is not valid TOML: {error}") from None
    except RecursionError:  # tomllib parses nested arrays recursively: a 50k-deep one made the page a 500
        raise PyprojectError("its pyproject.toml is nested too deeply to parse") from None


def sdist_pyproject(storage: Storage, sha256: str, filename: str) -> dict[str, Any] | None:
    """The parsed ``pyproject.toml`` of a stored sdist for a page; ``None`` if it has none or it cannot be read.

    A blob that cannot be read right now (storage trouble) also gives ``None``, but is not cached.
    """
    found, cached = _CACHE.get(sha256)
    if found:
        return cached
    try:
        parsed = read_sdist_pyproject(storage, sha256, filename)
    except StorageError:
        return None
    except (PyprojectError, OSError):
        parsed = None
    _CACHE.put(sha256, parsed)
    return parsed


def _table(data: dict[str, Any] | None, *path: str) -> dict[str, Any]:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _clean(name: str) -> str:
    return name.strip().strip("`").strip()


def _entry_description(value: Any) -> tuple[str, dict[str, Any]]:
    """A ``[tool.verifiers.args]`` value: a description string, or a table with ``description`` and more."""
    if isinstance(value, dict):
        return _text(value.get("description")), value
    return _text(value), {}


def _arguments(pyproject: dict[str, Any] | None, rows: list[dict[str, str]]) -> tuple[Argument, ...]:
    readme = {_clean(r.get("arg") or r.get("argument") or r.get("name") or ""): r for r in rows}
    readme.pop("", None)
    found: dict[str, Argument] = {}
    for raw_name, value in _table(pyproject, "tool", "verifiers", "args").items():
        name = _clean(str(raw_name))[:100]
        description, extra = _entry_description(value)
        row = readme.get(name, {})
        found[name] = Argument(name, _text(extra.get("type") or row.get("type"), 100),
                               _text(extra.get("default", row.get("default")), 200),
                               description or _text(row.get("description")))
    for name, row in readme.items():
        if name not in found:
            found[name[:100]] = Argument(name[:100], _text(row.get("type"), 100), _text(row.get("default"), 200),
                                         _text(row.get("description")))
    return tuple(list(found.values())[:_MAX_ENTRIES])


def _metrics(pyproject: dict[str, Any] | None, rows: list[dict[str, str]]) -> tuple[Metric, ...]:
    readme = {_clean(r.get("metric") or r.get("name") or ""): r for r in rows}
    readme.pop("", None)
    found: dict[str, Metric] = {}
    for raw_name, value in _table(pyproject, "tool", "verifiers", "metrics").items():
        name = _clean(str(raw_name))[:100]
        description, extra = _entry_description(value)
        row = readme.get(name, {})
        found[name] = Metric(name, _text(extra.get("weight", row.get("weight")), 50),
                             description or _text(row.get("meaning") or row.get("description")))
    for name, row in readme.items():
        if name not in found:
            found[name[:100]] = Metric(name[:100], _text(row.get("weight"), 50),
                                       _text(row.get("meaning") or row.get("description")))
    return tuple(list(found.values())[:_MAX_ENTRIES])


def split_tags(words: list[str] | str) -> tuple[str, ...]:
    """Tags from a list or from comma-separated keywords: lower-case, in order, without repeats."""
    items = words.split(",") if isinstance(words, str) else words
    tags = dict.fromkeys(_text(w, 50).lower() for w in items if isinstance(w, str))
    tags.pop("", None)
    return tuple(list(tags)[:_MAX_TAGS])


def _tags(pyproject: dict[str, Any] | None, keywords: str) -> tuple[str, ...]:
    declared = _table(pyproject, "project").get("tags")
    return split_tags(declared if isinstance(declared, list) else keywords)


def environment_details(pyproject: dict[str, Any] | None, tables: ReadmeTables | None,
                        keywords: str) -> EnvironmentDetails:
    """Merge the sdist's pyproject (if any) with the README's tables (read at upload) and the wheel's keywords."""
    eval_table = _table(pyproject, "tool", "verifiers", "eval")
    defaults = tuple((_text(k, 100), v[:100] if isinstance(v, str) else v)
                     for k, v in list(eval_table.items())[:20] if isinstance(v, (str, int, float, bool)))
    return EnvironmentDetails(
        tags=_tags(pyproject, keywords),
        arguments=_arguments(pyproject, tables.arguments if tables else []),
        metrics=_metrics(pyproject, tables.metrics if tables else []),
        eval_defaults=defaults,
    )


@dataclass(frozen=True)
class ReleaseRef:
    """One version's row id and its core metadata's keywords."""

    id: int
    keywords: str


def release_ref(session: Session, normalized: str, version: str) -> ReleaseRef | None:
    """The release ``normalized@version`` (``None`` if there is none; ``0.1`` finds ``0.1.0``)."""
    try:
        key = release_key(version)
    except InvalidVersion:
        return None
    row = session.execute(
        select(Release.id, Release.keywords).join(Project, Project.id == Release.project_id)
        .where(Project.normalized == normalized, Release.canonical_version == key)).first()
    return ReleaseRef(row.id, row.keywords or "") if row else None
