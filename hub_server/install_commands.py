"""The install commands the Hub shows and ``vf-hub install`` runs, built so PyPI can never win.

- uv: the owner's index as an *extra* index with ``--index-strategy first-index`` (stated
  explicitly so a user setting cannot turn it into best-match). uv asks extra indexes first and
  stops at the first one that has the project, so a same-named PyPI package is never considered.
  Dependencies the owner's index lacks (404) come from the default index as usual.
- pip: pip merges all indexes and takes the highest version, so an index cannot protect a name.
  The environment is therefore installed as a direct reference to the Hub's file with its
  ``#sha256=`` (PEP 508 ``name @ url``): pip fetches exactly those bytes, and resolves only
  the environment's dependencies from its index.

Credentials for private environments travel in the URL (``__token__:TOKEN@``), which both
clients understand; the commands shown on pages never contain a token. Shown commands are shell
text with every word quoted by :func:`shlex.quote` (``uv_text``, ``pip_text``): the Hub's URL may
come from the request's ``Host`` header, and no value should reach a visitor's shell unquoted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit


@dataclass(frozen=True)
class InstallTarget:
    """What to install: a project's name, version, and the file pip should fetch."""

    hub_url: str  # e.g. http://127.0.0.1:8000 (no trailing slash)
    owner: str
    name: str
    version: str
    file_path: str  # the file's URL path on the Hub, e.g. /files/<sha256>/<filename>
    sha256: str
    private: bool = False  # only then do the commands carry credentials


def with_token(url: str, token: str | None) -> str:
    """``url`` carrying ``__token__:TOKEN`` credentials (unchanged when ``token`` is None)."""
    if not token:
        return url
    parts = urlsplit(url)
    netloc = f"__token__:{quote(token, safe='')}@{parts.netloc.rsplit('@', 1)[-1]}"
    return urlunsplit(parts._replace(netloc=netloc))


def owner_index_url(hub_url: str, owner: str) -> str:
    """The per-owner simple index."""
    return f"{hub_url.rstrip('/')}/{owner}/simple/"


def uv_command(target: InstallTarget, token: str | None = None, python: str | None = None) -> list[str]:
    """``uv pip install NAME==VERSION`` with the owner's index searched first."""
    command = ["uv", "pip", "install"]
    if python:
        command += ["--python", python]
    return command + [
        f"{target.name}=={target.version}",
        "--extra-index-url", with_token(owner_index_url(target.hub_url, target.owner), token),
        "--index-strategy", "first-index",
    ]


def pip_requirement(target: InstallTarget, token: str | None = None) -> str:
    """A PEP 508 direct reference to the exact file, with its hash."""
    url = with_token(f"{target.hub_url.rstrip('/')}{target.file_path}", token)
    return f"{target.name} @ {url}#sha256={target.sha256}"


def pip_command(target: InstallTarget, token: str | None = None, python: str | None = None) -> list[str]:
    """``pip install "NAME @ URL#sha256=..."`` (run with the target interpreter's ``-m pip``)."""
    return [python or "python", "-m", "pip", "install", pip_requirement(target, token)]


def uv_text(target: InstallTarget) -> str:
    """The uv command as a page shows it: shell text, every word quoted, no token."""
    return shlex.join(uv_command(target))


def pip_text(target: InstallTarget) -> str:
    """``pip install 'NAME @ URL#sha256=...'`` as a page shows it: shell text, quoted, no token."""
    return shlex.join(["pip", "install", pip_requirement(target)])


def pick_file(filenames: list[str]) -> str | None:
    """The file a direct reference should name: a pure-Python wheel, else the sdist, else None."""
    wheels = [f for f in filenames if f.endswith("-none-any.whl")]
    sdists = [f for f in filenames if f.endswith(".tar.gz")]
    chosen = wheels or sdists
    return chosen[0] if chosen else None
