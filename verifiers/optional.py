"""Optional third-party packages: imported when a feature is used, with the install command when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from verifiers.errors import MissingDependencyError


def import_optional(module: str, feature: str, install: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingDependencyError` saying to run ``install``.

    >>> import_optional("json", "JSON", "pip install json").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        # Only the package itself being absent is "not installed"; a broken install shows its own error.
        if exc.name is not None and module.split(".")[0] != exc.name.split(".")[0]:
            raise
        raise MissingDependencyError(
            f"{feature} needs the {module.split('.')[0]!r} package, which is not installed: {install}"
        ) from exc


__all__ = ["import_optional"]
