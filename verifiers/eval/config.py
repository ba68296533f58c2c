"""The configuration of one evaluation run (``vf-eval``'s flags are its fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class EvalConfig(BaseModel):
    """Everything one evaluation run needs; every field is a ``vf-eval`` flag."""

    env_id: str = Field(description="Environment id: [owner/]name[@version].")
    env_args: dict[str, Any] = Field(default_factory=dict,
                                     description="Keyword arguments for load_environment, as a JSON object.")
    model: str = Field("gpt-4.1-mini", description="Model name sent to the API.")
    api_base_url: str = Field("https://api.openai.com/v1", description="Base URL of the OpenAI-compatible API.")
    api_key_var: str = Field("OPENAI_API_KEY", description="Environment variable that holds the API key.")
    headers: list[str] = Field(default_factory=list, description="Extra HTTP header 'Name: Value' (repeatable).")
    num_examples: int = Field(5, description="Examples to evaluate (-1: all).")
    rollouts_per_example: int = Field(3, ge=1, description="Rollouts per example (scored as a group).")
    max_concurrent: int = Field(32, description="Rollouts talking to the model at once (-1: no cap).")
    max_concurrent_scoring: int | None = Field(None, description="Groups scored at once "
                                                             "(default: as --max-concurrent).")
    max_tokens: int | None = Field(None, description="Max tokens per model response.")
    temperature: float | None = Field(None, description="Sampling temperature.")
    sampling_args: dict[str, Any] | None = Field(None, description="Sampling arguments as a JSON object; "
                                                               "wins over -t/-T.")
    output_dir: Path | None = Field(None, description="Folder for runs (default ./outputs); the run goes in "
                                                      "evals/<env>--<model>/<id>.")
    pass_threshold: float = Field(0.5, description="Reward at or above which a rollout counts as a pass (pass@k).")
    independent_scoring: bool = Field(False, description="Score every rollout alone instead of per example group.")
    timeout: float = Field(600.0, gt=0, description="Seconds before one model request times out.")
    max_retries: int = Field(3, ge=0, description="Retries of a failed model request (5xx, 429, timeouts) "
                                                  "with backoff.")

    def merged_sampling_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            args["temperature"] = self.temperature
        args.update(self.sampling_args or {})
        return args


__all__ = ["EvalConfig"]
