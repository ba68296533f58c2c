"""The Environments Hub: a Python package index for environment packages (PEP 503/691 simple API,
twine uploads, scoped tokens, owners). It reads package metadata; it never imports ``verifiers``.

>>> from hub_server import Settings, create_app
>>> app = create_app(Settings(data_dir=tmp_path))  # doctest: +SKIP
"""

from hub_server.app import create_app
from hub_server.settings import Settings

__all__ = ["Settings", "create_app"]
