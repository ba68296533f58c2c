"""science: MMLU physics, chemistry and biology as multiple-choice questions (see environment.py)."""

from science.environment import load_environment

__all__ = ["load_environment"]
