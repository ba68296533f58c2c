"""``vf-hub install``'s command line: a missing default installer is named, with the way out."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hub_server.client import install
from hub_server.errors import BadRequest
from hub_server.install_commands import InstallTarget

TARGET = InstallTarget("http://127.0.0.1:8080", "alice", "reverse-text", "0.1.0",
                       "/files/reverse_text-0.1.0-py3-none-any.whl", "0" * 64, private=False)


def test_without_uv_the_default_installer_says_how_to_get_it_or_use_pip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    monkeypatch.setattr(install.sys, "executable", str(tmp_path / "bin" / "python"))  # no uv beside it
    with pytest.raises(BadRequest, match=r"uv, the default installer, is not installed.*--with pip"):
        install.install_command(TARGET, "uv", None, sys.executable)
    assert install.install_command(TARGET, "pip", None, sys.executable)[1:3] == ["-m", "pip"]


def test_uv_beside_this_python_is_used_when_not_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "uv").write_text("")
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    monkeypatch.setattr(install.sys, "executable", str(tmp_path / "bin" / "python"))
    assert install.install_command(TARGET, "uv", None, sys.executable)[0] == str(tmp_path / "bin" / "uv")


def test_uv_replaces_an_installed_copy_of_the_same_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an editable checkout of reverse-text 0.1.0 satisfies `reverse-text==0.1.0` for uv; the Hub's copy is asked for
    monkeypatch.setattr(install.shutil, "which", lambda name: "/usr/bin/uv")
    command = install.install_command(TARGET, "uv", None, sys.executable)
    assert command[-2:] == ["--reinstall-package", "reverse-text"] and "reverse-text==0.1.0" in command
