"""The era an environment's package declares, for code that overrides no hook and so names none.

A plain ``vf.SingleTurnEnv(..., rubric=vf.MathRubric())`` is the same source in both eras, yet the two
originals score it differently. Its package still says which release it was written for: the
``verifiers`` requirement in its installed metadata, or in the ``pyproject.toml`` beside a module loaded
from a folder (``vf-init``'s layout). A requirement whose lowest allowed version is below 0.1.8 (the
first State-era release) places it in the tuple era; anything else, or no requirement, says nothing.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from verifiers.rollout.era import Era

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, a dependency there
    import tomli as tomllib

FIRST_STATE_RELEASE = Version("0.1.8")
_SDK_PACKAGE = "verifiers"


def era_of_requirement(specifier: SpecifierSet) -> Era | None:
    """``tuple`` when the lowest version ``specifier`` allows is below 0.1.8 (or it only allows such versions)."""
    lower: list[Version] = []
    upper_below_state = False
    for spec in specifier:
        try:
            version = Version(spec.version.removesuffix(".*"))
        except InvalidVersion:
            return None
        if spec.operator in (">=", ">", "==", "~=", "==="):
            lower.append(version)
        elif spec.operator in ("<", "<=") and (
            version <= FIRST_STATE_RELEASE if spec.operator == "<" else version < FIRST_STATE_RELEASE
        ):
            upper_below_state = True
    if lower:
        return "tuple" if max(lower) < FIRST_STATE_RELEASE else None
    return "tuple" if upper_below_state else None


def _verifiers_specifier(requirements: list[str]) -> SpecifierSet | None:
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name.lower() == _SDK_PACKAGE and not requirement.extras:
            return requirement.specifier
    return None


def _installed_requirements(top_level: str) -> list[str] | None:
    distributions = importlib.metadata.packages_distributions().get(top_level, [])
    for name in distributions:
        requires = importlib.metadata.requires(name)
        if requires is not None:
            return requires
    return None


def _pyproject_requirements(module_file: str) -> list[str] | None:
    """``[project] dependencies`` of the pyproject.toml beside the module (or beside its package folder)."""
    folder = Path(module_file).resolve().parent
    for candidate in (folder / "pyproject.toml", folder.parent / "pyproject.toml"):
        if candidate.is_file():
            try:
                project = tomllib.loads(candidate.read_text(encoding="utf-8")).get("project", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return None
            dependencies = project.get("dependencies", []) if isinstance(project, dict) else []
            return [d for d in dependencies if isinstance(d, str)]
    return None


@functools.cache
def declared_era(module_name: str, module_file: str | None) -> Era | None:
    """The era the package of ``module_name`` declares through its ``verifiers`` requirement, if any."""
    top_level = module_name.partition(".")[0]
    if top_level in (_SDK_PACKAGE, "__main__", "builtins"):
        return None
    requirements = _installed_requirements(top_level)
    if requirements is None and module_file:
        requirements = _pyproject_requirements(module_file)
    specifier = _verifiers_specifier(requirements or [])
    return era_of_requirement(specifier) if specifier is not None else None


def builder_era(cls: type) -> Era | None:
    """The declared era of whoever wrote the environment: the module of a user's subclass, else the first
    caller outside the SDK (a module's ``load_environment`` building a ``vf.SingleTurnEnv``)."""
    module = sys.modules.get(cls.__module__)
    if not cls.__module__.startswith(_SDK_PACKAGE + "."):
        return declared_era(cls.__module__, getattr(module, "__file__", None))
    frame = inspect.currentframe()
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != _SDK_PACKAGE and not name.startswith(_SDK_PACKAGE + "."):
            return declared_era(name, frame.f_globals.get("__file__"))
        frame = frame.f_back
    return None


__all__ = ["FIRST_STATE_RELEASE", "builder_era", "declared_era", "era_of_requirement"]
