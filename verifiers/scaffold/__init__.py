"""Scaffolding for new environment packages (the library behind ``vf-init``).

>>> from verifiers.scaffold import init_environment
>>> init_environment("my-env", "environments")  # doctest: +SKIP
PosixPath('environments/my_env')
"""

from __future__ import annotations

from verifiers.scaffold.init import EnvName, init_environment, parse_env_name

__all__ = ["EnvName", "init_environment", "parse_env_name"]
