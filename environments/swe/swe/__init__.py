"""swe: fix a mutated bug in a small real Python project until its tests pass (see environment.py)."""

from swe.environment import load_environment

__all__ = ["load_environment"]
