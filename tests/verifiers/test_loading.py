"""load_environment: the id grammar, local folders, versions, and clear errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import verifiers as vf
from verifiers.errors import EnvironmentLoadError, EnvironmentNotFoundError, UsageError
from verifiers.loading import parse_env_id

ENV_SOURCE = textwrap.dedent('''
    import verifiers as vf
    from datasets import Dataset

    def load_environment(size: int = 2, fail: bool = False):
        if fail:
            raise RuntimeError("cannot build")
        ds = Dataset.from_list([{"question": str(i), "answer": str(i)} for i in range(size)])
        return vf.SingleTurnEnv(dataset=ds)
''')


@pytest.fixture
def local_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "environments" / "my_local_env"
    folder.mkdir(parents=True)
    (folder / "my_local_env.py").write_text(ENV_SOURCE)
    monkeypatch.chdir(tmp_path)
    return folder


def test_parse_env_id_grammar() -> None:
    assert parse_env_id("gsm8k").module == "gsm8k"
    parsed = parse_env_id("prime/reverse-text@0.1.2")
    assert (parsed.owner, parsed.name, parsed.version, parsed.module) == (
        "prime", "reverse-text", "0.1.2", "reverse_text")
    assert str(parsed) == "prime/reverse-text@0.1.2"
    for bad in ["", "a/b/c", "name@", "@1.0", "bad name", "../x"]:
        with pytest.raises(UsageError):
            parse_env_id(bad)


def test_loads_from_local_folder_with_owner_prefix_and_dashes(local_env: Path) -> None:
    env = vf.load_environment("someone/my-local-env", size=3)
    assert len(env.get_dataset()) == 3
    assert env.env_id == "my-local-env" and env.env_args == {"size": 3}


def test_clear_errors(local_env: Path) -> None:
    with pytest.raises(EnvironmentNotFoundError, match="Could not import 'no-such-env'") as info:
        vf.load_environment("no-such-env")
    assert isinstance(info.value, ValueError)  # what the original raised
    with pytest.raises(UsageError, match="does not take argument.*colour.*accepts: size, fail"):
        vf.load_environment("my-local-env", colour="red")
    with pytest.raises(EnvironmentLoadError, match="cannot build") as failed:
        vf.load_environment("my-local-env", fail=True)
    assert isinstance(failed.value, RuntimeError)


def test_version_must_match_the_installed_distribution() -> None:
    pytest.importorskip("reverse_text")
    with pytest.raises(EnvironmentNotFoundError, match="version"):
        vf.load_environment("reverse-text@99.0.0")


ENV_ID_CASES = json.loads((Path(__file__).resolve().parents[1] / "shared_cases" / "env_ids.json").read_text())["cases"]


@pytest.mark.parametrize("case", ENV_ID_CASES, ids=lambda c: c["ref"][:48])
def test_env_ids_follow_the_grammar_the_hub_shares(case: dict) -> None:
    """The same table as tests/hub_server/test_names.py's: the SDK and the Hub differ only where it says why."""
    if case["sdk"]:
        parsed = parse_env_id(case["ref"])
        assert (parsed.owner, parsed.name, parsed.version) == (case["owner"], case["name"], case["version"])
    else:
        with pytest.raises(UsageError, match="invalid environment id"):
            parse_env_id(case["ref"])
