"""Endpoint registries and provider shortcuts, resolved into an EvalConfig."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig
from verifiers.eval.endpoints import PROVIDERS, find_registry, load_endpoints, resolve_endpoint


def _registry(tmp_path: Path) -> Path:
    path = tmp_path / "endpoints.toml"
    path.write_text('[fast]\nmodel = "real"\nurl = "http://10.0.0.1/v1"\nkey = "FAST"\n'
                    '[[endpoint]]\nendpoint_id = "old"\nmodel = "o"\nurl = "https://o.example/v1"\nkey = "O"\n'
                    '[[endpoint]]\nendpoint_id = "old"\nmodel = "o2"\nurl = "https://o2.example/v1"\nkey = "O"\n')
    return path


def test_both_toml_forms_load_and_a_repeated_0_3_0_id_keeps_its_first_entry(tmp_path: Path) -> None:
    endpoints = load_endpoints(_registry(tmp_path))
    assert (endpoints["fast"].model, endpoints["old"].model) == ("real", "o")


def test_precedence_explicit_then_provider_then_registry(tmp_path: Path) -> None:
    path = _registry(tmp_path)
    plain = resolve_endpoint(EvalConfig(env_id="e", model="fast", endpoints_path=path))
    assert (plain.model, plain.api_base_url, plain.api_key_var) == ("real", "http://10.0.0.1/v1", "FAST")
    provided = resolve_endpoint(EvalConfig(env_id="e", model="fast", endpoints_path=path, provider="groq"))
    assert (provided.model, provided.api_base_url) == ("real", PROVIDERS["groq"].url)
    explicit = resolve_endpoint(EvalConfig(env_id="e", model="fast", endpoints_path=path, provider="groq",
                                           api_key_var="MINE"))
    assert (explicit.api_base_url, explicit.api_key_var) == (PROVIDERS["groq"].url, "MINE")
    unknown = resolve_endpoint(EvalConfig(env_id="e", model="other", endpoints_path=path))
    assert unknown.model == "other" and unknown.api_base_url == "https://api.openai.com/v1"


def test_a_folder_is_searched_and_no_default_registry_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_registry(None) is None
    with pytest.raises(UsageError, match="holds no endpoints.toml or endpoints.py"):
        find_registry(tmp_path)
    (tmp_path / "endpoints.py").write_text("ENDPOINTS = {}\n")
    assert find_registry(tmp_path) == tmp_path / "endpoints.py"
