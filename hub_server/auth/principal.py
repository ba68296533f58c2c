"""Who is asking, and what they may do: a user acting through one token.

A token can only narrow what its user may do: ``permission`` ("read" or "publish"), and an
optional scope to one owner or one project. A user may read and publish the projects of
their own namespace and of the organisations they belong to.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from hub_server.auth.tokens import parse_token, secret_matches
from hub_server.db.models import Membership, Owner, Project, Token, utcnow
from hub_server.errors import Forbidden

READ = "read"
PUBLISH = "publish"
PERMISSIONS = (READ, PUBLISH)


@dataclass(frozen=True)
class Principal:
    """An authenticated user acting through one token."""

    user_id: int
    user_name: str
    token_id: int
    permission: str
    scope_owner_id: int | None
    scope_project: str | None
    owner_ids: frozenset[int]  # the user and the organisations they belong to
    admin_of: frozenset[int]  # the user and the organisations they administer

    def _in_scope(self, owner_id: int, normalized: str | None) -> bool:
        if owner_id not in self.owner_ids:
            return False
        if self.scope_owner_id is not None and owner_id != self.scope_owner_id:
            return False
        return self.scope_project is None or self.scope_project == normalized

    def can_read(self, project: Project) -> bool:
        """Whether this principal may see ``project`` (public projects are visible to everyone)."""
        return not project.private or self._in_scope(project.owner_id, project.normalized)

    def can_publish(self, owner_id: int, normalized: str) -> bool:
        """Whether this principal may upload to (or create) project ``normalized`` of ``owner_id``."""
        return self.permission == PUBLISH and self._in_scope(owner_id, normalized)


def can_read(principal: Principal | None, project: Project) -> bool:
    """Read access for a principal or for anonymous callers (``None``)."""
    return principal.can_read(project) if principal else not project.private


def readable_projects(principal: Principal | None) -> ColumnElement[bool]:
    """:func:`can_read` as a SQL condition on ``Project`` rows, so lists filter in the database.

    Quarantine is not part of it (callers that list projects exclude quarantined ones themselves).
    """
    public = Project.private.is_(False)
    if principal is None:
        return public
    owners = principal.owner_ids
    if principal.scope_owner_id is not None:
        owners = owners & {principal.scope_owner_id}
    if not owners:
        return public
    in_scope: ColumnElement[bool] = Project.owner_id.in_(sorted(owners))
    if principal.scope_project is not None:
        in_scope = and_(in_scope, Project.normalized == principal.scope_project)
    return or_(public, in_scope)


def authenticate(session: Session, token_text: str, now: dt.datetime | None = None) -> Principal:
    """The principal a token speaks for.

    Raises:
        Forbidden: unknown, malformed, expired or revoked token (one message for all: no oracle).
    """
    now = now or utcnow()
    parts = parse_token(token_text)
    token = session.scalar(select(Token).where(Token.public_id == parts.public_id)) if parts else None
    if parts is None or token is None or not secret_matches(parts.secret, token.secret_sha256):
        raise Forbidden("invalid or non-existent authentication token")
    if token.revoked_at is not None:
        raise Forbidden("this API token has been revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise Forbidden("this API token has expired; create a new one with `vf-hub token create`")
    memberships = session.execute(
        select(Membership.org_id, Membership.role).where(Membership.user_id == token.user_id)).all()
    user = session.get(Owner, token.user_id)
    assert user is not None  # enforced by the foreign key
    return Principal(
        user_id=user.id,
        user_name=user.name,
        token_id=token.id,
        permission=token.permission,
        scope_owner_id=token.scope_owner_id,
        scope_project=token.scope_project,
        owner_ids=frozenset({user.id, *(org for org, _ in memberships)}),
        admin_of=frozenset({user.id, *(org for org, role in memberships if role == "admin")}),
    )
