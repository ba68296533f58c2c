"""Optional packages: a missing one is a MissingDependencyError naming the install command."""

from __future__ import annotations

import sys

import pytest

from verifiers.errors import MissingDependencyError, UsageError
from verifiers.optional import import_optional


def test_an_installed_module_is_returned():
    assert import_optional("json", "JSON", "pip install json").__name__ == "json"


def test_a_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "not_here_pkg", None)
    with pytest.raises(MissingDependencyError, match="Feature needs the 'not_here_pkg' package.*pip install nhp") as e:
        import_optional("not_here_pkg.sub", "Feature", "pip install nhp")
    assert isinstance(e.value, ImportError) and isinstance(e.value, UsageError)


def test_a_broken_install_keeps_its_own_error(monkeypatch):
    # broken_pkg is installed but one of its own imports is missing: that is not "install broken_pkg".
    def failing_import(name, *args, **kwargs):
        raise ModuleNotFoundError("No module named 'its_dependency'", name="its_dependency")

    monkeypatch.setattr("importlib.import_module", failing_import)
    with pytest.raises(ModuleNotFoundError) as caught:
        import_optional("broken_pkg", "Feature", "pip install broken")
    assert not isinstance(caught.value, MissingDependencyError)
