"""What an environment says about itself: the sdist's [tool.verifiers] table merged with its README tables."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from hub_server.services.environments import (
    Argument,
    Metric,
    PyprojectError,
    environment_details,
    read_sdist_pyproject,
    sdist_pyproject,
    split_tags,
)
from hub_server.services.readme_tables import readme_tables
from hub_server.storage import LocalStorage, blob_key
from tests.hub_server.web.envdists import PYPROJECT, README, env_sdist


def _store(storage: LocalStorage, sdist: Path) -> str:
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    copy = storage.staging_dir() / "in"
    shutil.copy(sdist, copy)
    storage.put(blob_key(sha), copy)
    return sha


def test_pyproject_names_and_describes_the_readme_adds_types_defaults_and_weights() -> None:
    pyproject = tomllib.loads(PYPROJECT.format(name="demo", version="0.1.0", tag="math"))
    details = environment_details(pyproject, readme_tables(README.format(name="demo")), "ignored")
    assert details.tags == ("single-turn", "math")
    assert details.arguments == (
        Argument("num_examples", "int", "100", "How many examples to use."),
        Argument("seed", "int", "0", "Picks the rows; the same seed gives the same rows."),
    )
    # declared metrics first, then what only the README lists
    assert details.metrics == (
        Metric("exact_match", "1.0", "1.0 when the reply equals the answer (weight 1)."),
        Metric("reward", "", "Weighted sum."),
    )
    # as written; checked when shown
    assert details.eval_defaults == (("num_examples", 20), ("rollouts_per_example", 3))


def test_without_an_sdist_the_readme_and_keywords_are_used() -> None:
    details = environment_details(None, readme_tables(README.format(name="demo")), "Math, single-turn,,math")
    assert details.tags == ("math", "single-turn")
    assert [a.name for a in details.arguments] == ["num_examples", "seed"]
    assert details.arguments[0].description == "Rows in the evaluation split."
    assert details.eval_defaults == ()


def test_table_valued_arguments_and_non_markdown_readmes() -> None:
    pyproject = {"tool": {"verifiers": {"args": {"k": {"description": "Top k.", "type": "int", "default": 5}},
                                        "metrics": "not a table"}}}
    details = environment_details(pyproject, None, "")  # a reST README has no tables read
    assert details.arguments == (Argument("k", "int", "5", "Top k."),)
    assert details.metrics == () and details.tags == ()


def test_split_tags_normalises_and_deduplicates() -> None:
    assert split_tags(" Text ,text, multi  turn") == ("text", "multi turn")
    assert split_tags(["a", 3, "B", "a"]) == ("a", "b")  # type: ignore[list-item]


def test_sdist_pyproject_reads_the_stored_archive(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    sdist = env_sdist(tmp_path, "demo-env", "0.2.0", tag="games")
    sha = _store(storage, sdist)
    table = sdist_pyproject(storage, sha, sdist.name)
    assert table is not None and table["project"]["tags"] == ["single-turn", "games"]


def test_sdists_without_a_readable_pyproject_give_none(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    broken = env_sdist(tmp_path / "a", "demo-env", "0.3.0", pyproject="[project\nname=")
    assert sdist_pyproject(storage, _store(storage, broken), broken.name) is None
    not_tar = tmp_path / "demo_env-0.4.0.tar.gz"
    not_tar.write_bytes(b"not a gzip file")
    assert sdist_pyproject(storage, _store(storage, not_tar), not_tar.name) is None
    # nested deeper than tomllib's recursion goes: the page used to answer 500
    deep = env_sdist(tmp_path / "b", "demo-env", "0.6.0", pyproject="x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert sdist_pyproject(storage, _store(storage, deep), deep.name) is None


def test_the_check_reads_a_broken_pyproject_as_the_packages_fault(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    for version, text, reason in (("0.3.0", "[project\nname=", "not valid TOML"),
                                  ("0.6.0", "x = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply")):
        sdist = env_sdist(tmp_path / version, "demo-env", version, pyproject=text)
        with pytest.raises(PyprojectError, match=reason):
            read_sdist_pyproject(storage, _store(storage, sdist), sdist.name)


def test_a_blob_missing_for_now_is_not_remembered_as_missing(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    sdist = env_sdist(tmp_path, "demo-env", "0.5.0", tag="late")
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert sdist_pyproject(storage, sha, sdist.name) is None
    _store(storage, sdist)
    table = sdist_pyproject(storage, sha, sdist.name)
    assert table is not None and table["project"]["version"] == "0.5.0"
