"""Compatibility path ``verifiers.utils.async_utils``; the real home is :mod:`verifiers.awaitables`."""

from verifiers.awaitables import maybe_await

__all__ = ["maybe_await"]
