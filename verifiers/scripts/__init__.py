"""Compatibility path ``verifiers.scripts``: the entry points live in :mod:`cli` and :mod:`verifiers.eval`."""
