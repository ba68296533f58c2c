"""EvalConfig's bounds and base URL check, and the one-line problems the CLI prints from them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verifiers.eval.config import EvalConfig, check_base_url, config_problems, valid_range


def _problems(**fields: object) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        EvalConfig(env_id="reverse-text", **fields)
    return config_problems(caught.value)


@pytest.mark.parametrize("value", [-1, 1, 100])
def test_num_examples_is_all_or_positive(value: int) -> None:
    assert EvalConfig(env_id="e", num_examples=value).num_examples == value


@pytest.mark.parametrize("value", [0, -2, -5])
def test_num_examples_zero_or_other_negatives_are_refused(value: int) -> None:
    assert _problems(num_examples=value) == [("num_examples", f"must be -1 (all) or >= 1, got {value}")]


@pytest.mark.parametrize(
    "field, value, text",
    [
        ("rollouts_per_example", 0, "must be >= 1, got 0"),
        ("max_concurrent", 0, "must be -1 (no cap) or >= 1, got 0"),
        ("max_concurrent_scoring", 0, "must be >= 1, got 0"),
        ("max_tokens", 0, "must be >= 1, got 0"),
        ("temperature", -0.1, "must be >= 0, got -0.1"),
        ("timeout", 0, "must be > 0, got 0"),
        ("max_retries", -1, "must be >= 0, got -1"),
        ("pass_threshold", -0.5, "must be in [0, 1], got -0.5"),
        ("pass_threshold", 1.5, "must be in [0, 1], got 1.5"),
    ],
)
def test_numbers_out_of_range_name_the_range(field: str, value: float, text: str) -> None:
    assert _problems(**{field: value}) == [(field, text)]


def test_minus_one_keeps_its_meaning_for_the_example_count_and_the_concurrency_cap() -> None:
    config = EvalConfig(env_id="x", num_examples=-1, max_concurrent=-1)
    assert (config.num_examples, config.max_concurrent) == (-1, -1)


def test_bounds_are_read_from_the_fields() -> None:
    assert valid_range("pass_threshold") == "in [0, 1]"
    assert valid_range("timeout") == "> 0"
    assert valid_range("model") is None


def test_every_problem_is_listed_without_a_pydantic_url() -> None:
    problems = _problems(rollouts_per_example=0, max_concurrent="many")
    assert [field for field, _ in problems] == ["rollouts_per_example", "max_concurrent"]
    assert all("pydantic.dev" not in text for _, text in problems)
    assert problems[1][1].endswith("got 'many'")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://[::1]:8000/v1"])
def test_http_urls_with_a_host_pass(url: str) -> None:
    assert check_base_url(url) == url


@pytest.mark.parametrize(
    "url, message",
    [
        ("127.0.0.1:8000/v1", "did you mean http://127.0.0.1:8000/v1?"),
        ("localhost:8000/v1", "did you mean http://localhost:8000/v1?"),
        ("api.openai.com/v1", "did you mean https://api.openai.com/v1?"),
        ("ftp://example.com/v1", "must be an http:// or https:// URL, not ftp://"),
        ("http:///v1", "has no host"),
    ],
)
def test_bad_base_urls_say_what_to_write(url: str, message: str) -> None:
    [(field, text)] = _problems(api_base_url=url)
    assert field == "api_base_url" and message in text
