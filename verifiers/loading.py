"""``load_environment(env_id, **env_args)``: from an id to a ready environment.

Ids follow one grammar: ``[owner/]name[@version]``. The module imported is
``name`` with dashes as underscores (a Hub owner prefix only says where the
package came from); a ``@version`` must match the installed distribution.
A package not installed but present as ``./environments/<module>`` (the
layout ``vf-init`` creates) is imported from there, for development.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import inspect
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from verifiers.errors import EnvironmentLoadError, EnvironmentNotFoundError, UsageError

logger = logging.getLogger("verifiers.loading")

# The Hub's grammar (hub_server/names.py), written out here because the SDK never imports the Hub: owners
# are 1-39 lowercase letters, digits and inner dashes; names are PEP 508 project names of at most 100
# characters; versions are PEP 440. tests/data/env_id_cases.json holds both implementations to one table.
OWNER = r"[a-z0-9](?:[a-z0-9-]{0,37}[a-z0-9])?"
NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"
ENV_ID = re.compile(rf"^(?:(?P<owner>{OWNER})/)?(?P<name>{NAME})(?:@(?P<version>[^/@\s]+))?$")


@dataclass(frozen=True)
class EnvId:
    """A parsed environment id."""

    name: str
    owner: str | None = None
    version: str | None = None

    @property
    def module(self) -> str:
        return self.name.replace("-", "_").replace(".", "_")

    @property
    def distribution(self) -> str:
        """The PEP 503 normalised package name."""
        return re.sub(r"[-_.]+", "-", self.name).lower()

    def __str__(self) -> str:
        owner = f"{self.owner}/" if self.owner else ""
        version = f"@{self.version}" if self.version else ""
        return f"{owner}{self.name}{version}"


def parse_env_id(env_id: str) -> EnvId:
    """Split ``[owner/]name[@version]``; raise :class:`UsageError` on anything else."""
    match = ENV_ID.match(env_id.strip()) if isinstance(env_id, str) else None
    if match is None:
        raise UsageError(f"invalid environment id {env_id!r}: expected [owner/]name[@version], "
                         "e.g. 'gsm8k' or 'me/gsm8k@0.1.2' (an owner is lowercase letters, digits and inner '-')")
    version = match["version"]
    if version is not None:
        try:
            Version(version)  # local labels (+build) are fine: an installed local build can be asked for
        except InvalidVersion:
            raise UsageError(f"invalid environment id {env_id!r}: {version!r} is not a PEP 440 version") from None
    return EnvId(match["name"], match["owner"], version)


def local_module_dir(module: str) -> Path | None:
    """``./environments/<module>`` (or ``./<module>``) when it holds the module's source."""
    for root in (Path.cwd() / "environments", Path.cwd()):
        candidate = root / module
        if (candidate / f"{module}.py").is_file() or (candidate / module / "__init__.py").is_file():
            return candidate
    return None


def _installed_env_modules() -> list[str]:
    names = []
    for dist in importlib.metadata.distributions():
        if any(str(req).replace(" ", "").startswith("verifiers") for req in dist.requires or []):
            names.append(dist.metadata["Name"].replace("-", "_"))
    return names


def _import(env: EnvId) -> Any:
    try:
        return importlib.import_module(env.module)
    except ModuleNotFoundError as error:
        if error.name != env.module:
            raise EnvironmentLoadError(f"Failed to load environment '{env}': {error}") from error
    local = local_module_dir(env.module)
    if local is not None:
        sys.path.insert(0, str(local))
        return importlib.import_module(env.module)
    hint = difflib.get_close_matches(env.module, _installed_env_modules(), n=1)
    did_you_mean = f" Did you mean '{hint[0].replace('_', '-')}'?" if hint else ""
    raise EnvironmentNotFoundError(
        f"Could not import '{env}' environment. Ensure the package for the environment id '{env}' is installed "
        f"(pip install it, or `vf-hub install {env}`).{did_you_mean}"
    )


def _check_version(env: EnvId) -> None:
    if env.version is None:
        return
    try:
        installed = importlib.metadata.version(env.distribution)
    except importlib.metadata.PackageNotFoundError:
        return  # imported from a local folder: no distribution to compare
    if installed != env.version:
        raise EnvironmentNotFoundError(
            f"environment '{env}' requested, but version {installed} is installed; "
            f"install the requested one (e.g. `vf-hub install {env}`)"
        )


def load_environment(env_id: str, **env_args: Any) -> Any:
    """Import the environment's module and call its ``load_environment(**env_args)``.

    Raises:
        EnvironmentNotFoundError: (a ValueError) nothing provides ``env_id``.
        EnvironmentLoadError: (a RuntimeError) the module failed to build the environment.
        UsageError: the id or the arguments are malformed.

    Example:
        >>> env = load_environment("reverse-text", num_eval_examples=5)  # doctest: +SKIP
    """
    env = parse_env_id(env_id)
    module = _import(env)
    _check_version(env)
    factory = getattr(module, "load_environment", None)
    if not callable(factory):
        raise EnvironmentLoadError(
            f"module '{env.module}' has no load_environment(); another installed package may have the same name"
        )
    _check_args(env, factory, env_args)
    try:
        environment = factory(**env_args)
    except UsageError:
        raise
    except Exception as error:  # anything else an env module raises is its failure to load, re-raised typed
        raise EnvironmentLoadError(f"Failed to load environment '{env}': {error!r}") from error
    environment.env_id = environment.env_id or env.name
    environment.env_args = dict(env_args)
    return environment


def _check_args(env: EnvId, factory: Any, env_args: dict[str, Any]) -> None:
    params = inspect.signature(factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(env_args) - set(params))
    if unknown:
        accepted = ", ".join(params) or "none"
        raise UsageError(f"environment '{env}' does not take argument(s) {', '.join(unknown)}; it accepts: {accepted}")
    logger.debug("loading %s with %s (defaults: %s)", env, env_args,
                 {k: p.default for k, p in params.items() if p.default is not p.empty})


__all__ = ["EnvId", "load_environment", "parse_env_id"]
