"""Tests for verifiers.scaffold.init: names, layouts, and a package that works as written."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from verifiers.errors import UsageError
from verifiers.scaffold import EnvName, init_environment, parse_env_name


@pytest.mark.parametrize(
    ("name", "dist", "module"),
    [
        ("my-env", "my-env", "my_env"),
        ("My_Env", "my-env", "my_env"),
        ("word.count", "word-count", "word_count"),
        ("a__b--c", "a-b-c", "a_b_c"),
        ("env2", "env2", "env2"),
        ("x", "x", "x"),
    ],
)
def test_parse_env_name_normalises(name: str, dist: str, module: str) -> None:
    assert parse_env_name(name) == EnvName(dist=dist, module=module)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("my env", "whitespace"),
        ("my\tenv", "whitespace"),
        ("1env", "starts with a digit"),
        ("a/b", "path separator"),
        ("..\\b", "path separator"),
        ("-env", "not a valid package name"),
        ("env-", "not a valid package name"),
        ("my$env", "not a valid package name"),
        ("café", "not a valid package name"),
        ("class", "keyword"),
        ("json", "shadow"),
        ("verifiers", "shadow"),
    ],
)
def test_parse_env_name_rejects_bad_names(name: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        parse_env_name(name)


def test_single_file_layout(tmp_path: Path) -> None:
    root = init_environment("my-env", tmp_path)
    assert root == tmp_path / "my_env"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == ["README.md", "my_env.py", "pyproject.toml", "tests/test_my_env.py"]


def test_multi_file_layout(tmp_path: Path) -> None:
    root = init_environment("my-env", tmp_path, multi_file=True)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "my_env/__init__.py",
        "my_env/environment.py",
        "pyproject.toml",
        "tests/test_my_env.py",
    ]
    assert "from my_env.environment import load_environment" in (root / "my_env/__init__.py").read_text()


def test_pyproject_metadata(tmp_path: Path) -> None:
    root = init_environment("My_Env", tmp_path)
    data = tomllib.loads((root / "pyproject.toml").read_text())
    project = data["project"]
    assert project["name"] == "my-env"
    assert project["version"] == "0.1.0"
    assert project["dependencies"] == ["verifiers>=0.3.0"]
    assert project["description"] and project["tags"] and project["requires-python"]
    assert data["build-system"]["build-backend"] == "hatchling.build"
    tool = data["tool"]["verifiers"]
    assert tool["eval"] == {"num_examples": 5, "rollouts_per_example": 3}
    assert set(tool["args"]) == {"num_examples", "system_prompt"}
    assert set(tool["metrics"]) == {"exact_answer"}


def test_readme_sections(tmp_path: Path) -> None:
    readme = (init_environment("my-env", tmp_path) / "README.md").read_text()
    for heading in ("Overview", "Datasets", "Task", "Quickstart", "Environment Arguments", "Metrics"):
        assert f"### {heading}" in readme
    assert "vf-eval my-env" in readme
    assert "| `num_examples` |" in readme and "| `exact_answer` |" in readme


def _import_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_starter_environment_loads_and_scores(tmp_path: Path) -> None:
    root = init_environment("starter-check", tmp_path)
    module = _import_module(root / "starter_check.py", "starter_check")
    env = module.load_environment(num_examples=2)
    assert len(env.get_eval_dataset()) == 2
    assert env.rubric.get_reward_func_names() == ["exact_answer"]
    parser = env.parser
    assert module.exact_answer([{"role": "assistant", "content": " paris\n"}], "Paris", parser) == 1.0
    assert module.exact_answer([{"role": "assistant", "content": "Lyon"}], "Paris", parser) == 0.0
    with pytest.raises(ValueError, match="num_examples"):
        module.load_environment(num_examples=0)


def test_existing_folder_is_not_overwritten(tmp_path: Path) -> None:
    root = init_environment("my-env", tmp_path)
    (root / "my_env.py").write_text("# edited\n")
    with pytest.raises(UsageError, match="already exists"):
        init_environment("my-env", tmp_path)
    assert (root / "my_env.py").read_text() == "# edited\n"


def test_rewrite_readme_touches_only_the_readme(tmp_path: Path) -> None:
    root = init_environment("my-env", tmp_path)
    (root / "my_env.py").write_text("# edited\n")
    (root / "README.md").write_text("old\n")
    assert init_environment("my-env", tmp_path, rewrite_readme=True) == root
    assert "### Quickstart" in (root / "README.md").read_text()
    assert (root / "my_env.py").read_text() == "# edited\n"


def test_target_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "my_env").write_text("not a folder")
    with pytest.raises(UsageError, match="not a folder"):
        init_environment("my-env", tmp_path, rewrite_readme=True)


def test_bad_name_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        init_environment("bad name", tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("multi_file", [False, True])
def test_package_builds_a_wheel_with_only_the_environment(tmp_path: Path, multi_file: bool) -> None:
    root = init_environment("wheel-check", tmp_path / "envs", multi_file=multi_file)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(root)],
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == "wheel_check-0.1.0-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    code = sorted(n for n in names if ".dist-info/" not in n)
    expected = ["wheel_check/__init__.py", "wheel_check/environment.py"] if multi_file else ["wheel_check.py"]
    assert code == expected
    metadata = zipfile.ZipFile(wheel).read("wheel_check-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: verifiers>=0.3.0" in metadata
