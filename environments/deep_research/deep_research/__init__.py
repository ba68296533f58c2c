"""deep-research: multi-hop questions over the Python 3.11 documentation, with search, open and finish tools
(see environment.py)."""

from deep_research.environment import load_environment

__all__ = ["load_environment"]
