"""Compatibility path ``verifiers.envs.integrations.reasoninggym_env`` (0.3.0); the real home is
:mod:`verifiers.envs.reasoninggym_env`."""

from verifiers.envs.reasoninggym_env import ReasoningGymEnv

__all__ = ["ReasoningGymEnv"]
