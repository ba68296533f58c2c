"""The bearer header of the weight routes for tests that call them by hand (the session's run secret)."""

from __future__ import annotations

import os


def admin_headers() -> dict[str, str]:
    """``Authorization: Bearer <VF_RUN_SECRET>``, the secret tests/conftest.py sets for the session."""
    return {"Authorization": f"Bearer {os.environ['VF_RUN_SECRET']}"}
