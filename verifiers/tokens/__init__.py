"""Token-level outputs for training: per-turn tokens from server responses, and samples from rollouts."""

from verifiers.tokens.response_tokens import step_tokens
from verifiers.tokens.samples import TrainingSample, process_env_results_vllm, trajectory_to_samples

__all__ = ["TrainingSample", "process_env_results_vllm", "step_tokens", "trajectory_to_samples"]
