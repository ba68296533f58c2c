"""An owner's public profile: what kind of owner it is and who belongs to it (for the owner page)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.db.models import Membership, Owner
from hub_server.services.accounts import ORG, get_owner


@dataclass(frozen=True)
class OwnerProfile:
    """A user (with the organisations it belongs to) or an organisation (with its members)."""

    name: str
    kind: str  # "user" | "org"
    created_at: dt.datetime
    members: tuple[str, ...]  # of an organisation
    organisations: tuple[str, ...]  # a user belongs to


def owner_profile(session: Session, name: str) -> OwnerProfile:
    """The profile of ``name``; :class:`~hub_server.errors.NotFound` if there is no such owner."""
    owner = get_owner(session, name)
    if owner.kind == ORG:
        rows = session.scalars(select(Owner.name).join(Membership, Membership.user_id == Owner.id)
                               .where(Membership.org_id == owner.id).order_by(Owner.name))
        return OwnerProfile(owner.name, owner.kind, owner.created_at, tuple(rows), ())
    rows = session.scalars(select(Owner.name).join(Membership, Membership.org_id == Owner.id)
                           .where(Membership.user_id == owner.id).order_by(Owner.name))
    return OwnerProfile(owner.name, owner.kind, owner.created_at, (), tuple(rows))
