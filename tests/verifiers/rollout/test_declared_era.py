"""The era a package declares through its ``verifiers`` requirement, for code that names none."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import verifiers as vf
from verifiers.rollout.declared_era import declared_era, era_of_requirement
from verifiers.rollout.era import code_era


@pytest.mark.parametrize(("specifier", "era"), [
    (">=0.1.3", "tuple"), ("==0.1.5", "tuple"), ("~=0.1.4", "tuple"), (">0.1.6", "tuple"),
    (">=0.1.3,<0.2", "tuple"), ("<0.1.8", "tuple"), ("<=0.1.7", "tuple"), ("==0.1.*", "tuple"),
    (">=0.1.8", None), ("==0.3.0", None), (">=0.2,<0.4", None), ("<0.4", None), ("<=0.1.8", None), ("", None),
])
def test_the_lowest_allowed_version_places_the_era(specifier: str, era: str | None) -> None:
    assert era_of_requirement(SpecifierSet(specifier)) == era


@pytest.fixture
def import_root(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        importlib.invalidate_caches()


ENV_SOURCE = textwrap.dedent('''
    from datasets import Dataset
    import verifiers as vf

    def load_environment():
        return vf.SingleTurnEnv(eval_dataset=Dataset.from_list([{"question": "q", "answer": "a"}]))
''')


def _folder_env(root: Path, module: str, dependencies: str) -> vf.Environment:
    """A vf-init style folder: <module>/<module>.py with its pyproject.toml beside it."""
    folder = root / module
    folder.mkdir()
    (folder / f"{module}.py").write_text(ENV_SOURCE)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{module}"\nversion = "0.1.0"\n'
                                           f"dependencies = {dependencies}\n")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(module).load_environment()
    finally:
        sys.path.remove(str(folder))


def test_a_folder_module_declaring_an_old_verifiers_builds_tuple_era_envs(import_root: Path) -> None:
    assert _folder_env(import_root, "declared_old_env", '["verifiers>=0.1.3"]').era == "tuple"
    assert _folder_env(import_root, "declared_new_env", '["verifiers>=0.3.0"]').era == "state"
    assert _folder_env(import_root, "declared_none_env", '["datasets"]').era == "state"


def test_installed_metadata_is_read_first(import_root: Path) -> None:
    (import_root / "installed_old_env").mkdir()
    (import_root / "installed_old_env" / "__init__.py").write_text(ENV_SOURCE)
    info = import_root / "installed_old_env-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: installed-old-env\nVersion: 0.1.0\n"
                                   "Requires-Dist: verifiers==0.1.5\n")
    (info / "top_level.txt").write_text("installed_old_env\n")
    importlib.invalidate_caches()
    env = importlib.import_module("installed_old_env").load_environment()
    assert env.era == "tuple"
    assert declared_era("installed_old_env", None) == "tuple"


def test_a_broken_pyproject_says_nothing(import_root: Path) -> None:
    folder = import_root / "broken_pyproject_env"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project\nnot toml")
    assert declared_era("broken_pyproject_env", str(folder / "broken_pyproject_env.py")) is None


def test_code_that_names_its_era_wins_over_the_declaration() -> None:
    class StateStyle(vf.SingleTurnEnv):
        @vf.stop
        async def done(self, state) -> bool:
            return True

    class TupleStyle(vf.MultiTurnEnv):
        async def is_completed(self, messages, state, **kwargs) -> bool:
            return True

        async def env_response(self, messages, state, **kwargs):
            return [], state

    class Plain(vf.SingleTurnEnv):
        pass

    assert (code_era(StateStyle), code_era(TupleStyle), code_era(Plain)) == ("state", "tuple", None)


def test_a_rubric_assigned_after_init_learns_the_era() -> None:
    pytest.importorskip("math_verify", reason="pip install math-verify (the test extra has it)")

    class Late(vf.MultiTurnEnv):
        async def is_completed(self, messages, state, **kwargs) -> bool:
            return True

        async def env_response(self, messages, state, **kwargs):
            return [], state

    from datasets import Dataset

    env = Late(eval_dataset=Dataset.from_list([{"question": "q", "answer": "a"}]))
    env.rubric = vf.MathRubric()
    assert env.rubric.get_reward_func_names() == ["correct_answer_reward_func"]
