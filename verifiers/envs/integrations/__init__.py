"""Compatibility path ``verifiers.envs.integrations`` (0.3.0); the environments live in :mod:`verifiers.envs`."""
