"""Names on the Hub: owners, projects (PEP 503), environment references ``owner/name[@version]``.

A project's distribution name is unique across the whole Hub after PEP 503 normalisation (as on
PyPI), so ``/simple/<name>/`` is never ambiguous; ``owner/name`` is how people refer to it and
``/<owner>/simple/`` is the narrow index installs use. See ``docs/hub.md`` ("Names and
dependency confusion") for why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_version
from packaging.version import InvalidVersion, Version

from hub_server.errors import BadRequest

_PROJECT = re.compile(r"([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])", re.IGNORECASE)
_OWNER = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,37}[a-z0-9])?")
MAX_PROJECT_NAME = 100

# Top-level path segments of the app: an owner named like one would shadow a route.
RESERVED_OWNERS = frozenset(
    {"simple", "legacy", "files", "api", "static", "admin", "login", "logout", "search", "docs", "health",
     "owners", "settings", "new", "about", "help", "pypi", "hub", "www", "root", "metrics"}
)


def normalize(name: str) -> str:
    """PEP 503 normalised form: runs of ``-_.`` become one ``-``, lowercased."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_project_name(name: str, reserved: list[str] | tuple[str, ...] = ()) -> str:
    """Return the normalised name of a valid, unreserved project name; raise :class:`BadRequest` otherwise."""
    if len(name) > MAX_PROJECT_NAME or not _PROJECT.fullmatch(name):
        raise BadRequest(
            f"invalid project name {name!r}: use letters, digits, '-', '_' and '.', starting and ending "
            f"with a letter or digit (at most {MAX_PROJECT_NAME} characters)"
        )
    normal = normalize(name)
    if normal in {normalize(r) for r in reserved}:
        raise BadRequest(
            f"the project name {name!r} is reserved on this Hub (it names a package people install from PyPI)")
    return normal


def check_owner_name(name: str) -> str:
    """Return a valid owner name (lowercase letters, digits, inner dashes; 1-39 characters)."""
    if not _OWNER.fullmatch(name):
        raise BadRequest(
            f"invalid owner name {name!r}: use 1-39 lowercase letters, digits and inner '-'"
        )
    if name in RESERVED_OWNERS:
        raise BadRequest(f"the owner name {name!r} is reserved (it is a path of the Hub)")
    return name


def check_version(version: str) -> Version:
    """A PEP 440 public version (no ``+local`` label, which indexes must refuse)."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise BadRequest(f"invalid version {version!r}: not a PEP 440 version") from None
    if parsed.local is not None:
        raise BadRequest(f"invalid version {version!r}: local versions (+label) cannot be uploaded to an index")
    return parsed


def release_key(version: Version | str) -> str:
    """The key one release is stored under: PEP 440's normal form with trailing ``.0`` release parts dropped,
    since PEP 440 compares ``0.1``, ``0.1.0`` and ``0.1.0.0`` equal and pip reads them as one version.

    >>> release_key("0.1.0"), release_key("0.1"), release_key("1.0.0rc1"), release_key("2.00")
    ('0.1', '0.1', '1rc1', '2')
    """
    return canonicalize_version(version if isinstance(version, Version) else Version(version),
                                strip_trailing_zero=True)


@dataclass(frozen=True)
class EnvRef:
    """A reference ``owner/name[@version]`` to an environment on the Hub."""

    owner: str
    name: str
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}" + (f"@{self.version}" if self.version else "")


def parse_env_ref(text: str) -> EnvRef:
    """Parse ``owner/name[@version]``; raise :class:`BadRequest` with the expected form otherwise."""
    match = re.fullmatch(r"([^/@\s]+)/([^/@\s]+)(?:@([^/@\s]+))?", text.strip())
    if match is None:
        raise BadRequest(f"invalid environment reference {text!r}: expected OWNER/NAME or OWNER/NAME@VERSION")
    owner, name, version = match.groups()
    check_owner_name(owner)
    check_project_name(name)
    if version is not None:
        check_version(version)
    return EnvRef(owner, name, version)
