"""Names: PEP 503 normalisation, project and owner rules, references ``owner/name[@version]``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub_server.errors import BadRequest
from hub_server.names import EnvRef, check_owner_name, check_project_name, check_version, normalize, parse_env_ref


@pytest.mark.parametrize(("name", "expected"), [
    ("Demo_Env.Pkg", "demo-env-pkg"), ("a--b__c..d", "a-b-c-d"), ("A", "a"), ("x-_.y", "x-y"),
])
def test_normalize_follows_pep_503(name: str, expected: str) -> None:
    assert normalize(name) == expected


@pytest.mark.parametrize("name", ["", "-a", "a-", "a b", "a/b", "../x", "é", "x" * 101, "numpy\n", "a\nb"])
def test_invalid_project_names_are_refused(name: str) -> None:
    with pytest.raises(BadRequest, match="invalid project name"):
        check_project_name(name)


def test_reserved_names_are_refused_in_any_spelling() -> None:
    assert check_project_name("Reverse_Text") == "reverse-text"
    with pytest.raises(BadRequest, match="reserved"):
        check_project_name("Ver.Ifiers", reserved=["ver-ifiers"])


@pytest.mark.parametrize("name", ["Alice", "-a", "a-", "a_b", "x" * 40, "", "alice\n"])
def test_invalid_owner_names_are_refused(name: str) -> None:
    with pytest.raises(BadRequest, match="invalid owner"):
        check_owner_name(name)


@pytest.mark.parametrize("name", ["simple", "legacy", "files", "api"])
def test_owner_names_that_are_routes_are_reserved(name: str) -> None:
    with pytest.raises(BadRequest, match="reserved"):
        check_owner_name(name)


def test_versions_must_be_public_pep_440() -> None:
    assert str(check_version("1.0.0rc1")) == "1.0.0rc1"
    with pytest.raises(BadRequest, match="local versions"):
        check_version("1.0+local")
    with pytest.raises(BadRequest, match="not a PEP 440"):
        check_version("one")


def test_env_refs_parse_and_print_back() -> None:
    assert parse_env_ref("alice/demo-env@0.2.0") == EnvRef("alice", "demo-env", "0.2.0")
    assert str(parse_env_ref(" alice/demo-env ")) == "alice/demo-env"
    for bad in ["demo-env", "alice/", "a/b/c", "alice/demo@", "alice/demo@x y"]:
        with pytest.raises(BadRequest):
            parse_env_ref(bad)


ENV_ID_CASES = json.loads((Path(__file__).resolve().parents[1] / "shared_cases" / "env_ids.json").read_text())["cases"]


@pytest.mark.parametrize("case", ENV_ID_CASES, ids=lambda c: c["ref"][:48])
def test_env_refs_follow_the_grammar_the_sdk_shares(case: dict) -> None:
    """The same table as tests/verifiers/test_loading.py's: the Hub and the SDK differ only where it says why."""
    assert case["sdk"] == case["hub"] or case.get("why"), case
    if case["hub"]:
        assert parse_env_ref(case["ref"]) == EnvRef(case["owner"], case["name"], case["version"])
    else:
        with pytest.raises(BadRequest):
            parse_env_ref(case["ref"])
