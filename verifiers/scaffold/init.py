"""Write a new, pip-installable environment package from the bundled templates.

The package works the moment it is written: its starter ``load_environment``
builds a tiny in-code dataset, a :class:`~verifiers.SingleTurnEnv` and a
rubric, and its test runs one rollout against a local scripted server. Authors
then replace the dataset and reward with their task.

Layouts (``name = "my-env"``)::

    <path>/my_env/                      <path>/my_env/          (--multi-file)
    ├── pyproject.toml                  ├── pyproject.toml
    ├── README.md                       ├── README.md
    ├── my_env.py                       ├── my_env/
    └── tests/test_my_env.py            │   ├── __init__.py
                                        │   └── environment.py
                                        └── tests/test_my_env.py
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

from verifiers.errors import UsageError

# PEP 508 project names; PEP 503 then folds case and runs of "-", "_", ".".
_PROJECT_NAME = re.compile(r"([a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])", re.IGNORECASE)
# Importing the environment must not pick up another module of the same name: the standard library's, this
# project's top-level packages (the SDK's and those the Hub's and the trainer's distributions install) and its
# checkout's folders.
_RESERVED = frozenset(sys.stdlib_module_names) | {
    "verifiers", "hub_server", "trainer_adapter", "tests", "test", "environments",
}


@dataclass(frozen=True)
class EnvName:
    """The names one environment goes by.

    ``dist`` is the normalised distribution name (``pip install my-env``,
    ``vf-eval my-env``); ``module`` is what ``load_environment`` imports.
    """

    dist: str
    module: str


def parse_env_name(name: str) -> EnvName:
    """Validate an environment name and derive its distribution and module names.

    >>> parse_env_name("My_Env")
    EnvName(dist='my-env', module='my_env')

    Raises:
        UsageError: the name is empty, has spaces or path separators, starts
            with a digit, is not a valid project name, or would shadow a
            standard-library or SDK module.
    """
    if not name or not name.strip():
        raise UsageError("the environment name is empty; pass a name such as 'my-env'")
    if any(sep in name for sep in ("/", "\\")):
        raise UsageError(f"{name!r} contains a path separator; give a bare name and choose the folder with --path")
    if any(ch.isspace() for ch in name):
        raise UsageError(f"{name!r} contains whitespace; use '-' or '_' between words (e.g. 'my-env')")
    if not _PROJECT_NAME.fullmatch(name) or not name.isascii():
        raise UsageError(
            f"{name!r} is not a valid package name: use ASCII letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if name[0].isdigit():
        raise UsageError(f"{name!r} starts with a digit, so it cannot be imported as a Python module")
    dist = re.sub(r"[-_.]+", "-", name).lower()
    module = dist.replace("-", "_")
    if keyword.iskeyword(module):
        raise UsageError(f"{name!r} is a Python keyword, so it cannot be imported as a module")
    if module in _RESERVED:
        raise UsageError(f"{name!r} would shadow the module '{module}'; choose a more specific name")
    return EnvName(dist=dist, module=module)


def init_environment(
    name: str,
    path: str | Path = "environments",
    *,
    multi_file: bool = False,
    rewrite_readme: bool = False,
) -> Path:
    """Create the package folder ``<path>/<module>/`` and return its path.

    Args:
        name: the environment id, e.g. ``"my-env"`` (see :func:`parse_env_name`).
        path: the folder that holds environment packages.
        multi_file: write a package directory instead of a single module.
        rewrite_readme: when the folder already exists, regenerate only its
            ``README.md`` and leave every other file as it is.

    Raises:
        UsageError: a bad name, or a target that exists (without ``rewrite_readme``)
            or is not a folder.
    """
    env = parse_env_name(name)
    root = Path(path) / env.module
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    if root.exists():
        if not rewrite_readme:
            raise UsageError(
                f"{root} already exists; nothing was changed "
                "(pass --rewrite-readme to regenerate only its README.md)"
            )
        _write(root / "README.md", _render("README.md.tmpl", env))
        return root
    for relative, template in _layout(env, multi_file).items():
        _write(root / relative, _render(template, env, multi_file=multi_file))
    return root


def _layout(env: EnvName, multi_file: bool) -> dict[str, str]:
    """Files of the package (relative path → template name)."""
    layout = {
        "pyproject.toml": "pyproject.toml.tmpl",
        "README.md": "README.md.tmpl",
        f"tests/test_{env.module}.py": "test_module.py.tmpl",
    }
    if multi_file:
        layout[f"{env.module}/__init__.py"] = "package_init.py.tmpl"
        layout[f"{env.module}/environment.py"] = "module.py.tmpl"
    else:
        layout[f"{env.module}.py"] = "module.py.tmpl"
    return layout


def _render(template: str, env: EnvName, *, multi_file: bool = False) -> str:
    text = (files("verifiers.scaffold") / "templates" / template).read_text(encoding="utf-8")
    # hatchling needs to be told what goes into the wheel, or it would ship tests/ too.
    wheel_files = f'packages = ["{env.module}"]' if multi_file else f'only-include = ["{env.module}.py"]'
    return Template(text).substitute(name=env.dist, module=env.module, wheel_files=wheel_files)


def _write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


__all__ = ["EnvName", "init_environment", "parse_env_name"]
