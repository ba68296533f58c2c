"""Reading tokens from Authorization headers."""

from __future__ import annotations

import base64

import pytest

from hub_server.auth.credentials import token_from_header
from hub_server.errors import Forbidden


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_basic_token_user_and_bearer_are_accepted() -> None:
    assert token_from_header(None) is None
    assert token_from_header(_basic("__token__", "vfh_x")) == "vfh_x"
    assert token_from_header("Bearer  vfh_y ") == "vfh_y"
    assert token_from_header("bearer vfh_z") == "vfh_z"


@pytest.mark.parametrize("header", [_basic("alice", "pw"), "Basic !!!", "Digest abc", "Bearer ",
                                    "Basic " + base64.b64encode(b"no-colon").decode()])
def test_other_credentials_are_forbidden(header: str) -> None:
    with pytest.raises(Forbidden):
        token_from_header(header)
