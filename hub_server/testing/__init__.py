"""Test doubles and fixtures for the Hub, shared by its tests and benchmarks: hand-made distribution files
(:mod:`hub_server.testing.dists`) and nginx in front of a Hub on 127.0.0.1 (:mod:`hub_server.testing.nginx`).

No product module imports this package (an import contract in ``pyproject.toml``); like ``verifiers.testing``
it ships so that a deployment's own tests and ``bench/`` can use it without the repository's ``tests/``.
"""

__all__: list[str] = []
