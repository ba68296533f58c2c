"""Owners (users, organisations), memberships and API tokens."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server.auth.principal import PERMISSIONS, PUBLISH, Principal
from hub_server.auth.tokens import hash_secret, new_token
from hub_server.db.models import Membership, Owner, Token, utcnow
from hub_server.errors import BadRequest, Conflict, Forbidden, NotFound
from hub_server.names import check_owner_name, check_project_name

USER = "user"
ORG = "org"
ROLES = ("admin", "member")


def get_owner(session: Session, name: str) -> Owner:
    """The owner called ``name``; :class:`NotFound` otherwise."""
    owner = session.scalar(select(Owner).where(Owner.name == name.lower()))
    if owner is None:
        raise NotFound(f"no owner named {name!r}")
    return owner


def _new_owner(session: Session, name: str, kind: str) -> Owner:
    check_owner_name(name)
    if session.scalar(select(Owner.id).where(Owner.name == name)) is not None:
        raise Conflict(f"the name {name!r} is taken by another user or organisation")
    owner = Owner(name=name, kind=kind)
    session.add(owner)
    session.flush()
    return owner


def create_user(session: Session, name: str, token_ttl: dt.timedelta | None) -> tuple[Owner, str]:
    """A new user and its first token (publish, unscoped); returns the token string, shown only once."""
    user = _new_owner(session, name, USER)
    token = issue_token(session, user, PUBLISH, expires_in=token_ttl, description="created with the user")
    return user, token


def create_org(session: Session, name: str, admin: str | None = None) -> Owner:
    """A new organisation, optionally with a first admin member."""
    org = _new_owner(session, name, ORG)
    if admin is not None:
        add_member(session, org.name, admin, "admin")
    return org


def add_member(session: Session, org_name: str, user_name: str, role: str = "member") -> Membership:
    """Add (or change the role of) a user in an organisation."""
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    org, user = get_owner(session, org_name), get_owner(session, user_name)
    if org.kind != ORG or user.kind != USER:
        raise BadRequest(f"{org_name!r} must be an organisation and {user_name!r} a user")
    member = session.scalar(select(Membership).where(Membership.org_id == org.id, Membership.user_id == user.id))
    if member is None:
        member = Membership(org_id=org.id, user_id=user.id, role=role)
        session.add(member)
    member.role = role
    session.flush()
    return member


def issue_token(
    session: Session,
    user: Owner,
    permission: str,
    *,
    expires_in: dt.timedelta | None,
    scope_owner: Owner | None = None,
    scope_project: str | None = None,
    description: str = "",
) -> str:
    """Store a new token for ``user`` (hashed) and return its string."""
    if permission not in PERMISSIONS:
        raise BadRequest(f"permission must be one of {', '.join(PERMISSIONS)}, not {permission!r}")
    parts = new_token()
    session.add(
        Token(
            public_id=parts.public_id,
            secret_sha256=hash_secret(parts.secret),
            user_id=user.id,
            permission=permission,
            scope_owner_id=scope_owner.id if scope_owner else None,
            scope_project=check_project_name(scope_project) if scope_project else None,
            description=description[:200],
            expires_at=utcnow() + expires_in if expires_in else None,
        )
    )
    session.flush()
    return str(parts)


def derive_token(
    session: Session,
    principal: Principal,
    permission: str,
    *,
    expires_in: dt.timedelta,
    scope_owner: str | None = None,
    scope_project: str | None = None,
    description: str = "",
) -> str:
    """A new token made with an existing one: it can only narrow what the caller's token allows."""
    if permission == PUBLISH and principal.permission != PUBLISH:
        raise Forbidden("a read-only token cannot create a publish token")
    owner = get_owner(session, scope_owner) if scope_owner else None
    owner_id = owner.id if owner else principal.scope_owner_id
    if owner is not None and (owner.id not in principal.owner_ids or principal.scope_owner_id not in (None, owner.id)):
        raise Forbidden(f"this token cannot create tokens for {scope_owner!r}")
    if principal.scope_project is not None:
        if scope_project is not None and check_project_name(scope_project) != principal.scope_project:
            raise Forbidden("a project-scoped token can only create tokens for its own project")
        scope_project = principal.scope_project
    if owner is None and owner_id is not None:
        owner = session.get(Owner, owner_id)
    user = session.get(Owner, principal.user_id)
    assert user is not None
    return issue_token(session, user, permission, expires_in=expires_in, scope_owner=owner,
                       scope_project=scope_project, description=description)


def revoke_token(session: Session, principal: Principal, public_id: str) -> None:
    """Revoke one of the caller's own tokens (by its public id, the 12 hex digits after ``vfh_``)."""
    token = session.scalar(select(Token).where(Token.public_id == public_id, Token.user_id == principal.user_id))
    if token is None:
        raise NotFound(f"no token {public_id!r} of yours")
    if principal.scope_project is not None or principal.scope_owner_id is not None:
        if token.id != principal.token_id:
            raise Forbidden("a scoped token can only revoke itself")
    token.revoked_at = token.revoked_at or utcnow()


def list_tokens(session: Session, principal: Principal) -> list[Token]:
    """The caller's tokens, newest first (secrets are never returned: only hashes are stored)."""
    return list(session.scalars(select(Token).where(Token.user_id == principal.user_id).order_by(Token.id.desc())))
