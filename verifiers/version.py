"""The SDK's version: API-compatible with classic verifiers 0.3.0, this project's own build label."""

__version__ = "0.3.0+envhub.1"
