"""Tools shared by the tool-calling compat environments of both eras (plain functions, no SDK import)."""

FACTS = {"color": "teal", "size": "7"}


def lookup(key: str) -> str:
    """Look up a fact.

    Args:
        key: The fact's name.
    """
    return FACTS[key]


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b
