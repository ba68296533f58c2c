"""The configuration of one evaluation run (``vf-eval``'s flags are its fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from verifiers.eval.outputs import OUTPUT_KEYS
from verifiers.eval.providers import PROVIDERS
from verifiers.http.openai_client import DEFAULT_MAX_RESPONSE_BYTES


class EvalConfig(BaseModel):
    """Everything one evaluation run needs; every field is a ``vf-eval`` flag."""

    env_id: str = Field(description="Environment id: [owner/]name[@version].")
    env_args: dict[str, Any] = Field(default_factory=dict,
                                     description="Keyword arguments for load_environment, as a JSON object.")
    model: str = Field("gpt-4.1-mini", description="Model name sent to the API.")
    api_base_url: str = Field("https://api.openai.com/v1", description="Base URL of the OpenAI-compatible API "
                                                                   "(http:// or https://).")
    api_key_var: str = Field("OPENAI_API_KEY", description="Environment variable that holds the API key.")
    endpoints_path: Path | None = Field(None, description="Registry of named endpoints: -m NAME takes its model, "
                                        "URL and key variable from it. A .toml file is read as data; a .py file "
                                        "(ENDPOINTS = {...}) is run, so use only your own (default: "
                                        "./configs/endpoints.toml, else ./configs/endpoints.py, if present).")
    provider: str | None = Field(None, description="OpenAI-compatible provider shortcut that sets the base URL and "
                                 "key variable (one of: openai, openrouter, together, deepseek, fireworks, groq, "
                                 "prime, local, vllm); -b/-k win over it, it wins over an -e entry.")
    headers: list[str] = Field(default_factory=list, description="Extra HTTP header 'Name: Value' (repeatable).")
    num_examples: int = Field(5, description="Examples to evaluate (-1: all; else >= 1).")
    rollouts_per_example: int = Field(3, ge=1, description="Rollouts per example (scored as a group).")
    max_concurrent: int = Field(32, description="Rollouts talking to the model at once (-1: no cap; else >= 1).")
    max_concurrent_scoring: int | None = Field(None, ge=1, description="Groups scored at once "
                                                             "(default: as --max-concurrent).")
    max_tokens: int | None = Field(None, ge=1, description="Max tokens per model response.")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature.")
    sampling_args: dict[str, Any] | None = Field(None, description="Sampling arguments as a JSON object; "
                                                               "wins over -t/-T.")
    state_columns: list[str] = Field(default_factory=list, description="Extra State keys saved per rollout in "
                                     "results.jsonl, comma-separated (a missing key is null; a value that is not "
                                     "JSON is saved as its repr).")
    save_dataset: Path | None = Field(None, description="After the run, also save the results as a Hugging Face "
                                      "dataset in this new folder (datasets.load_from_disk reads it).")
    output_dir: Path | None = Field(None, description="Folder for runs (default ./outputs); the run goes in "
                                                      "evals/<env>--<model>/<id>.")
    pass_threshold: float = Field(0.5, ge=0, le=1, description="Reward at or above which a rollout counts as a "
                                                               "pass (pass@k).")
    independent_scoring: bool = Field(False, description="Score every rollout alone instead of per example group.")
    scoring_timeout: float | None = Field(None, gt=0, description="Seconds one reward function may take for one "
                                          "rollout before it scores 0.0 and counts as failed (default: the "
                                          "rubric's own, 300 unless the environment sets another).")
    max_reply_bytes: int = Field(DEFAULT_MAX_RESPONSE_BYTES, ge=1024, description="Largest model reply body read, in "
                                 "bytes; a larger reply is that rollout's error (ReplyTooLargeError), not retried.")
    timeout: float = Field(600.0, gt=0, description="Seconds before one model request times out.")
    max_retries: int = Field(3, ge=0, description="Retries of a failed model request (5xx, 429, timeouts) "
                                                  "with backoff.")
    coalesce_requests: bool = Field(False, description="Send the identical requests of an example's rollouts "
                                    "that start together as one request with n replies (vLLM and OpenAI support "
                                    "n; the server pays for the prompt once). Seeded requests always go alone.")

    @field_validator("num_examples", "max_concurrent")
    @classmethod
    def _minus_one_or_positive(cls, value: int, info: ValidationInfo) -> int:
        # -1 is the original's "all examples" / "no cap"; 0 and other negatives used to mean "all" by accident.
        if value != -1 and value < 1:
            raise ValueError(f"must be -1 ({_MINUS_ONE[info.field_name or '']}) or >= 1")
        return value

    @field_validator("api_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_base_url(value)

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is not None and value not in PROVIDERS:
            raise ValueError(f"unknown provider {value!r} (known: {', '.join(PROVIDERS)})")
        return value

    @field_validator("state_columns")
    @classmethod
    def _new_column_names(cls, value: list[str]) -> list[str]:
        names = [name.strip() for name in value]
        if any(not name for name in names):
            raise ValueError("has an empty name (expected e.g. 'turn,timing')")
        taken = [name for name in names if name in OUTPUT_KEYS]
        if taken:
            # a state column of the same name would overwrite the record's own value
            raise ValueError(f"{taken[0]!r} is already a results.jsonl column")
        return list(dict.fromkeys(names))

    def merged_sampling_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            args["temperature"] = self.temperature
        args.update(self.sampling_args or {})
        return args


_MINUS_ONE = {"num_examples": "all", "max_concurrent": "no cap"}
_LOCAL_HOSTS = ("localhost", "0.0.0.0", "::1")
_BOUND_TEXT = {"ge": ">= {}", "gt": "> {}", "le": "<= {}", "lt": "< {}"}


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; else a ``ValueError`` that suggests the fix."""
    if "://" not in url:
        host = urlsplit(f"//{url}").hostname or ""
        scheme = "http" if host in _LOCAL_HOSTS or host.startswith("127.") else "https"  # local servers rarely TLS
        raise ValueError(f"must start with http:// or https:// (did you mean {scheme}://{url}?)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"must be an http:// or https:// URL, not {parts.scheme}://")
    if not parts.hostname:
        raise ValueError("has no host (expected e.g. http://127.0.0.1:8000/v1)")
    return url


def valid_range(field: str) -> str | None:
    """The bounds declared on an :class:`EvalConfig` field, as a reader writes them (``>= 1``, ``in [0, 1]``)."""
    bounds: dict[str, Any] = {}
    for item in EvalConfig.model_fields[field].metadata:
        for name in _BOUND_TEXT:
            if getattr(item, name, None) is not None:
                bounds[name] = getattr(item, name)
    if set(bounds) == {"ge", "le"}:
        return f"in [{bounds['ge']}, {bounds['le']}]"
    return " and ".join(_BOUND_TEXT[name].format(value) for name, value in bounds.items()) or None


def config_problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem of an :class:`EvalConfig` validation as ``(field, "must be >= 1, got 0")``, no pydantic URL."""
    problems: list[tuple[str, str]] = []
    for item in error.errors(include_url=False):
        field = ".".join(map(str, item["loc"]))
        bounds = valid_range(field) if field in EvalConfig.model_fields else None
        if item["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal") and bounds:
            text = f"must be {bounds}"
        else:
            text = item["msg"].removeprefix("Value error, ")
        given = item.get("input")
        # a URL message already quotes the URL it suggests; a number is always worth repeating
        if "input" in item and not isinstance(given, dict) and not (isinstance(given, str) and given in text):
            text += f", got {given!r}"
        problems.append((field, text))
    return problems


__all__ = ["EvalConfig", "check_base_url", "config_problems", "valid_range"]
