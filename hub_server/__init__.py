"""The Environments Hub: a Python package index for environment packages (PEP 503/691 simple API,
twine uploads, scoped tokens, owners). It reads package metadata; it never imports ``verifiers``.

>>> from hub_server import Settings, create_app
>>> app = create_app(Settings(data_dir=tmp_path))  # doctest: +SKIP

``Settings`` and ``create_app`` are loaded on first use: importing the package (as ``vf-hub``'s entry,
``hub_server.cli.hub_entry``, does) must not import FastAPI or pydantic-settings, so that a venv without the
Hub's dependencies gets the install command instead of a ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hub_server.app import create_app
    from hub_server.settings import Settings

# public name -> the module that defines it
_LAZY = {"create_app": "hub_server.app", "Settings": "hub_server.settings"}

__all__ = ["Settings", "create_app"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'hub_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
