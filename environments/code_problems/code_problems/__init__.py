"""code_problems: procedurally generated stdin/stdout programming problems graded in a sandbox."""

from code_problems.environment import load_environment

__all__ = ["load_environment"]
