"""Compatibility path ``verifiers.utils.logging_utils``; the real home is :mod:`verifiers.logs`."""

from verifiers.logs import log_level, print_prompt_completions_sample, quiet_verifiers, setup_logging

__all__ = ["log_level", "print_prompt_completions_sample", "quiet_verifiers", "setup_logging"]
