"""gsm8k: grade-school math word problems, answered in ``\\boxed{}`` (see environment.py)."""

from gsm8k.environment import load_environment

__all__ = ["load_environment"]
