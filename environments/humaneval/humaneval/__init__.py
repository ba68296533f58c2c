"""humaneval: write the function, pass its unit tests in a sandbox (see environment.py)."""

from humaneval.environment import load_environment

__all__ = ["load_environment"]
