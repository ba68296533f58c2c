"""Compatibility path ``verifiers.utils.tools``; the real home is :mod:`verifiers.tools.builtin`."""

from verifiers.tools.builtin import calculator, python

__all__ = ["calculator", "python"]
