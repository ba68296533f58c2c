"""The ``vf-hub`` console script: says which extra to install when the Hub's dependencies are missing.

``cli.vf_hub`` imports the Hub (FastAPI, SQLAlchemy, ...) at module level, and the venv ``scripts/main.sh``
builds has the SDK and the trainer only, where ``vf-hub --help`` used to end in a ``ModuleNotFoundError``.
"""

from __future__ import annotations

import sys

_OWN_PACKAGES = {"verifiers", "hub_server", "trainer_adapter", "cli"}


def main() -> None:
    """Run ``vf-hub``; exit 2 with the install command when a third-party dependency of the Hub is missing."""
    try:
        from cli.vf_hub import main as hub_main
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".", 1)[0]
        if not missing or missing in _OWN_PACKAGES:
            raise  # a broken install of this project, not a missing extra
        print(f"vf-hub: error: the Hub's dependencies are not installed (no module {missing!r}). Install them "
              "with: pip install -e '.[hub]' in a checkout, or pip install 'verifiers[hub]'", file=sys.stderr)
        raise SystemExit(2) from None
    hub_main()


if __name__ == "__main__":
    main()
