"""``[tool.verifiers.eval]``: where vf-eval finds an environment's own defaults, and what it does with bad ones."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from verifiers.errors import UsageError
from verifiers.eval.env_defaults import eval_defaults, find_pyproject

TABLE = '[project]\nname = "{name}"\nversion = "0.1.0"\n\n[tool.verifiers.eval]\n{body}\n'


def _env_folder(root: Path, module: str, name: str, body: str) -> Path:
    folder = root / module
    folder.mkdir(parents=True)
    (folder / f"{module}.py").write_text("def load_environment():\n    return None\n")
    (folder / "pyproject.toml").write_text(TABLE.format(name=name, body=body))
    return folder


def test_local_environments_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _env_folder(tmp_path / "environments", "dflt_local", "dflt-local", "num_examples = 7\nrollouts_per_example = 2")
    defaults = eval_defaults("me/dflt-local@0.1.0")
    assert defaults.values == {"num_examples": 7, "rollouts_per_example": 2}
    assert defaults.source == tmp_path / "environments" / "dflt_local" / "pyproject.toml"


def test_installed_from_a_local_folder(tmp_path: Path, monkeypatch) -> None:
    """pip records the source folder of ``pip install -e PATH`` / ``pip install PATH`` in direct_url.json."""
    source = _env_folder(tmp_path / "src", "dflt_installed", "dflt-installed", "max_tokens = 64")
    site = tmp_path / "site"
    info = site / "dflt_installed-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dflt-installed\nVersion: 0.1.0\n")
    (info / "direct_url.json").write_text(json.dumps({"url": source.as_uri(), "dir_info": {"editable": True}}))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    assert find_pyproject("dflt-installed") == source / "pyproject.toml"
    assert eval_defaults("dflt-installed").values == {"max_tokens": 64}


def test_an_unrelated_pyproject_is_not_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _env_folder(tmp_path / "environments", "dflt_other", "someone-else", "num_examples = 7")
    assert eval_defaults("dflt-other").source is None


def test_no_pyproject_means_no_defaults(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert eval_defaults("dflt-nowhere").values == {}


def test_unknown_keys_are_logged_and_ignored(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.chdir(tmp_path)
    _env_folder(tmp_path / "environments", "dflt_unknown", "dflt-unknown", "num_examples = 3\nbanana = 1")
    with caplog.at_level(logging.WARNING, logger="verifiers.eval"):
        assert eval_defaults("dflt-unknown").values == {"num_examples": 3}
    assert "banana" in caplog.text


@pytest.mark.parametrize("body, message", [
    ("num_examples = [", "cannot read"),
    ("", "must be a table"),
])
def test_broken_files_are_named(tmp_path: Path, monkeypatch, body: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    folder = _env_folder(tmp_path / "environments", "dflt_broken", "dflt-broken", body)
    if not body:
        (folder / "pyproject.toml").write_text('[project]\nname = "dflt-broken"\n[tool.verifiers]\neval = 3\n')
    with pytest.raises(UsageError, match=message):
        eval_defaults("dflt-broken")
