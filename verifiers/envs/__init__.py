"""The environment classes (one module each, as public environments import them)."""
