"""Tokens: the byte-level vocabulary and chat templates, per-turn tokens from server responses, samples."""

from verifiers.tokens.byte_tokenizer import SPECIAL_TOKENS, ByteTokenizer
from verifiers.tokens.chat_templates import CHATML, QWEN3_STYLE
from verifiers.tokens.response_tokens import step_tokens
from verifiers.tokens.samples import TrainingSample, process_env_results_vllm, trajectory_to_samples

__all__ = [
    "CHATML",
    "QWEN3_STYLE",
    "SPECIAL_TOKENS",
    "ByteTokenizer",
    "TrainingSample",
    "process_env_results_vllm",
    "step_tokens",
    "trajectory_to_samples",
]
