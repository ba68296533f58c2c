"""Compatibility path ``verifiers.utils.env_utils``; the real home is :mod:`verifiers.loading`."""

from verifiers.loading import load_environment

__all__ = ["load_environment"]
