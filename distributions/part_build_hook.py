"""The hatch build hook of the Hub's and the trainer's distributions: their package is copied into a wheel from
the checkout (``../../<package>``), and into a regular wheel only.

A config-level ``force-include`` would also copy it into an editable install's wheel, and that copy in
site-packages shadows the checkout on ``sys.path``: edits to the code would not be what ``vf-train`` or
``vf-hub`` runs. An editable install gets the checkout's root through ``dev-mode-dirs`` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PartBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Adds ``package`` (this hook's one setting) to regular wheels."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        package = self.config["package"]
        # Wheels are built from the checkout (pip, `python -m build --wheel`); an sdist of this folder alone would
        # lack the package and the SDK's version file, so none is offered.
        source = (Path(self.root) / ".." / ".." / package).resolve()
        if not source.is_dir():
            raise FileNotFoundError(f"{source}: build {package}'s wheel from the project's checkout")
        build_data["force_include"][str(source)] = package
