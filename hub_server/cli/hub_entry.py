"""The ``vf-hub`` console script: says what to install when the Hub's dependencies are missing.

``hub_server.cli.vf_hub`` imports the Hub (FastAPI, SQLAlchemy, ...) at module level. Where ``hub_server`` is
importable without them (a checkout's venv that has the SDK and the trainer only, as ``scripts/main.sh``
builds, or ``verifiers-hub`` installed with ``--no-deps``), ``vf-hub --help`` would end in a
``ModuleNotFoundError``; this entry, and ``hub_server/__init__.py``, import none of them.
"""

from __future__ import annotations

import sys

_OWN_PACKAGES = {"verifiers", "hub_server", "trainer_adapter"}


def main() -> None:
    """Run ``vf-hub``; exit 2 with the install command when a third-party dependency of the Hub is missing."""
    try:
        # The server's app too, though vf-hub imports it only in `serve`: it imports FastAPI, SQLAlchemy and the
        # rest, so a missing dependency is named here, before any command starts, not as a traceback mid-way.
        import hub_server.app  # noqa: F401
        from hub_server.cli.vf_hub import main as hub_main
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".", 1)[0]
        if not missing or missing in _OWN_PACKAGES:
            raise  # a broken install of this project, not a missing extra
        print(f"vf-hub: error: the Hub's dependencies are not installed (no module {missing!r}). Install them "
              "with: pip install -e distributions/hub in a checkout, or pip install verifiers-hub", file=sys.stderr)
        raise SystemExit(2) from None
    hub_main()


if __name__ == "__main__":
    main()
