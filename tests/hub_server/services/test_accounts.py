"""Owners, organisations and memberships: who may publish where."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hub_server.context import Hub
from hub_server.errors import BadRequest, Conflict, NotFound
from hub_server.services import accounts
from hub_server.testing.dists import make_wheel

Upload = Callable[..., httpx.Response]


def test_org_members_publish_under_the_org_others_do_not(hub: Hub, make_user: Callable[..., str],
                                                         upload: Upload, tmp_path: Path) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    with hub.db.write() as session:
        accounts.create_org(session, "lab", admin="alice")
    wheel = make_wheel(tmp_path, "lab-env", "0.1.0")
    assert upload(bob, wheel, "lab-env", "0.1.0", url="/lab/legacy/").status_code == 403
    assert upload(alice, wheel, "lab-env", "0.1.0", url="/lab/legacy/").status_code == 200
    with hub.db.write() as session:
        accounts.add_member(session, "lab", "bob")
    v2 = make_wheel(tmp_path, "lab-env", "0.2.0")
    assert upload(bob, v2, "lab-env", "0.2.0").status_code == 200  # existing project: its owner decides


def test_owner_names_are_unique_across_users_and_orgs(hub: Hub) -> None:
    with hub.db.write() as session:
        _user, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
        assert token.startswith("vfh_")
        with pytest.raises(Conflict):
            accounts.create_org(session, "alice")
        with pytest.raises(BadRequest):
            accounts.create_user(session, "Not Valid", None)
        with pytest.raises(NotFound):
            accounts.add_member(session, "nolab", "alice")
        accounts.create_org(session, "lab")
        with pytest.raises(BadRequest, match="role"):
            accounts.add_member(session, "lab", "alice", "owner")
        with pytest.raises(BadRequest, match="must be an organisation"):
            accounts.add_member(session, "alice", "alice")
