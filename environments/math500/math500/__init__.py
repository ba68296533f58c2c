"""math500: the MATH-500 competition problems, answered in ``\\boxed{}`` (see environment.py)."""

from math500.environment import load_environment

__all__ = ["load_environment"]
