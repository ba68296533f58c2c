"""Environment packages for page tests: a wheel and an sdist whose pyproject has a ``[tool.verifiers]`` table.

Built by hand (deterministic, milliseconds) in the layout ``vf-init`` produces; the README carries
the "Environment Arguments" and "Metrics" tables the scaffold writes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from hub_server.testing.dists import make_wheel, metadata_text, tar_gz

README = """# {name}

### Overview
- **Environment ID**: `{name}`

### Environment Arguments
| Arg | Type | Default | Description |
| --- | ---- | ------- | ----------- |
| `num_examples` | int | `100` | Rows in the evaluation split. |
| `seed` | int | `0` | Picks the rows. |

### Metrics
| Metric | Weight | Meaning |
| ------ | ------ | ------- |
| `reward` | | Weighted sum. |
| `exact_match` | 1.0 | 1.0 when the reply is right. |
"""

PYPROJECT = """[project]
name = "{name}"
version = "{version}"
tags = ["single-turn", "{tag}"]
keywords = ["single-turn", "{tag}"]

[tool.verifiers.eval]
num_examples = 20
rollouts_per_example = 3

[tool.verifiers.args]
num_examples = "How many examples to use."
seed = "Picks the rows; the same seed gives the same rows."

[tool.verifiers.metrics]
exact_match = "1.0 when the reply equals the answer (weight 1)."
"""


def env_sdist(out: Path, name: str, version: str, *, readme: str | None = None, tag: str = "text",
              pyproject: str | None = None, extra: dict[str, bytes] | None = None,
              links: dict[str, str] | None = None, summary: str = "A test environment.") -> Path:
    """An sdist ``<name>-<version>.tar.gz`` with PKG-INFO, README.md, pyproject.toml and a module."""
    escaped = name.replace("-", "_").lower()
    top = f"{escaped}-{version}"
    text = README.format(name=name) if readme is None else readme
    members = {
        f"{top}/PKG-INFO": metadata_text(name, version, description=text, keywords=f"single-turn,{tag}",
                                         summary=summary).encode(),
        f"{top}/pyproject.toml": (pyproject or PYPROJECT.format(name=name, version=version, tag=tag)).encode(),
        f"{top}/README.md": text.encode(),
        f"{top}/{escaped}.py": b"def load_environment(**kwargs):\n    raise NotImplementedError\n",
        **{f"{top}/{k}" if not k.startswith(("/", "..")) else k: v for k, v in (extra or {}).items()},
    }
    return tar_gz(out / f"{top}.tar.gz", members, links)


def env_dists(out: Path, name: str, version: str, *, readme: str | None = None, tag: str = "text",
              summary: str = "A test environment.") -> list[Path]:
    """The wheel and the sdist of one environment version."""
    text = README.format(name=name) if readme is None else readme
    wheel = make_wheel(out, name, version, description=text, keywords=f"single-turn,{tag}", summary=summary)
    return [wheel, env_sdist(out, name, version, readme=text, tag=tag, summary=summary)]


def publish(upload: Callable[..., httpx.Response], token: str, out: Path, name: str, version: str,
            **kwargs: str) -> list[Path]:
    """Build an environment version with :func:`env_dists` and upload both files through ``upload``."""
    dists = env_dists(out / f"{name}-{version}", name, version, **kwargs)
    for dist in dists:
        response = upload(token, dist, name, version)
        assert response.status_code == 200, response.text
    return dists
