"""Compatibility path ``verifiers.envs.integrations.textarena_env`` (0.3.0); the real home is
:mod:`verifiers.envs.textarena_env`."""

from verifiers.envs.textarena_env import TextArenaEnv

__all__ = ["TextArenaEnv"]
