"""Publishing one uploaded file: check it, store its blob durably, then make its row visible.

Order matters for crash safety: the blob (and its PEP 658 metadata blob) are durable in storage
before the transaction that inserts the file row commits, so an index never lists a file it
cannot serve. A crash in between leaves at most an unreferenced blob, never a dangling row.
The upload that creates a release also renders its README, once (``services/release_readme.py``),
before the write transaction, so the database lock is never held while a README is parsed.
"""

from __future__ import annotations

import hashlib
import hmac
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hub_server.auth.principal import Principal
from hub_server.db.database import Database
from hub_server.db.models import File, Owner, Project, Release, Token, utcnow
from hub_server.distributions import DEFAULT_MAX_UNPACKED, CoreMetadata, Filename, parse_filename, read_metadata
from hub_server.errors import BadRequest, FileExists, Forbidden
from hub_server.names import check_project_name, check_version, release_key
from hub_server.services import blob_repair, card_tags, release_readme, server_checks
from hub_server.services.accounts import get_owner
from hub_server.storage import Storage, blob_key

_COMMIT_ATTEMPTS = 3
_DIGESTS = ("sha256_digest", "blake2_256_digest", "md5_digest")


@dataclass(frozen=True)
class StagedFile:
    """An uploaded file received into the storage's staging folder, with the digests computed on the way."""

    path: Path
    filename: str
    size: int
    sha256: str
    blake2_256: str
    md5: str


@dataclass(frozen=True)
class Outcome:
    """What an upload did: ``created`` is False for an identical re-upload (a no-op, unless it ``repaired``
    a damaged or missing stored copy)."""

    project: str
    version: str
    filename: str
    created: bool
    repaired: bool = False


def _check_digests(fields: dict[str, str], staged: StagedFile) -> None:
    supplied = {key: fields.get(key, "").strip().lower() for key in _DIGESTS}
    if not supplied["sha256_digest"] and not supplied["blake2_256_digest"]:
        raise BadRequest("include at least one of sha256_digest and blake2_256_digest in the upload")
    actual = {"sha256_digest": staged.sha256, "blake2_256_digest": staged.blake2_256, "md5_digest": staged.md5}
    for key, value in supplied.items():
        if value and not hmac.compare_digest(value, actual[key]):
            raise BadRequest(f"the {key.removesuffix('_digest')} digest supplied does not match the file's content")


def check_upload(fields: dict[str, str], staged: StagedFile,
                 max_unpacked: int = DEFAULT_MAX_UNPACKED) -> tuple[Filename, CoreMetadata]:
    """Validate the form and the file (no database, no storage); return the parsed filename and metadata.

    ``max_unpacked`` bounds the bytes an sdist may decompress to while it is read.
    """
    if fields.get(":action", "file_upload") != "file_upload":
        raise BadRequest(f"unsupported :action {fields.get(':action')!r}; only file_upload is supported")
    if fields.get("protocol_version", "1") != "1":
        raise BadRequest("unsupported protocol_version; only 1 is supported")
    _check_digests(fields, staged)
    parsed = parse_filename(staged.filename)
    filetype = fields.get("filetype", parsed.packagetype)
    if filetype != parsed.packagetype:
        raise BadRequest(f"filetype {filetype!r} does not match the file {parsed.filename!r} ({parsed.packagetype})")
    name, version = fields.get("name", ""), fields.get("version", "")
    if not name or not version:
        raise BadRequest("the upload form must include the project 'name' and 'version'")
    if check_project_name(name) != parsed.name:
        raise BadRequest(
            f"the form names the project {name!r}, but the file {parsed.filename!r} is for {parsed.name!r}")
    if check_version(version) != parsed.version:
        raise BadRequest(f"the form's version {version} does not match the file {parsed.filename!r} ({parsed.version})")
    return parsed, read_metadata(staged.path, parsed, max_unpacked)


def _target_owner(session: Session, principal: Principal, owner_name: str | None) -> Owner:
    if owner_name is not None:
        return get_owner(session, owner_name)
    owner_id = principal.scope_owner_id or principal.user_id
    owner = session.get(Owner, owner_id)
    assert owner is not None
    return owner


def _authorize_new(session: Session, principal: Principal, owner_name: str | None, name: str,
                  reserved: list[str]) -> None:
    """Check the principal may create project ``name`` under the owner the upload targets."""
    check_project_name(name, reserved)
    owner = _target_owner(session, principal, owner_name)
    if not principal.can_publish(owner.id, name):
        raise Forbidden(f"this token may not create the project {name!r} under {owner.name!r}")


def _authorize(session: Session, principal: Principal, owner_name: str | None, name: str,
               reserved: list[str]) -> Project | None:
    """The existing project (or None for a new one) after checking the principal may publish it.

    A project the principal may not read (someone else's private one) is answered as if it did not
    exist: the refusal a new project would get, or, where a new one would be created, "not available"
    (names are unique across the Hub), never naming its owner.
    """
    project = session.scalar(select(Project).where(Project.normalized == name))
    if project is None:
        _authorize_new(session, principal, owner_name, name, reserved)
        return None
    if not principal.can_read(project):
        _authorize_new(session, principal, owner_name, name, reserved)
        raise BadRequest(f"the project name {name!r} is not available on this Hub; choose another name")
    if owner_name is not None and project.owner.name != owner_name:
        raise Forbidden(f"the project {name!r} belongs to {project.owner.name!r}, not {owner_name!r}")
    if not principal.can_publish(project.owner_id, name):
        raise Forbidden(f"this token may not upload to the project {project.owner.name}/{project.name}")
    return project


def _existing_file(session: Session, staged: StagedFile) -> File | None:
    """An earlier file of the same name: identical (returned) or a refusal."""
    existing = session.scalar(select(File).where(File.filename == staged.filename))
    if existing is None:
        return None
    if existing.deleted_at is not None:
        raise FileExists(f"File already exists: the filename {staged.filename!r} was previously used and deleted; "
                         "filenames can never be reused, so upload a new version")
    if existing.sha256 != staged.sha256:
        raise FileExists(f"File already exists: {staged.filename!r} was uploaded before with other content; "
                         "upload a new version instead")
    return existing


def _metadata_file(storage: Storage, meta: CoreMetadata) -> Path:
    with tempfile.NamedTemporaryFile(dir=storage.staging_dir(), prefix="meta-", delete=False) as handle:
        handle.write(meta.raw)
    return Path(handle.name)


def _store_blobs(db: Database, storage: Storage, staged: StagedFile, meta: CoreMetadata, parsed: Filename,
                 check_stored: bool) -> tuple[str | None, bool]:
    """Make the file (and a wheel's metadata file) durable: ``(the metadata's sha256 for wheels, repaired)``.

    A digest that is quarantined, or with ``check_stored`` (an identical re-upload) any stored copy, is
    re-hashed and replaced if it is missing or wrong (``services/blob_repair.py``).
    """
    blobs: list[tuple[str, Path | None]] = [(staged.sha256, staged.path)]
    metadata_sha = None
    if parsed.packagetype == "bdist_wheel":
        metadata_sha = hashlib.sha256(meta.raw).hexdigest()
        blobs.insert(0, (metadata_sha, None))  # before the file, as for a new upload
    marked = blob_repair.quarantined(db, [digest for digest, _ in blobs])
    repaired = False
    for digest, source in blobs:
        path = source if source is not None else _metadata_file(storage, meta)
        if check_stored or digest in marked:
            repaired |= blob_repair.repair(db, storage, digest, path)
        else:
            storage.put(blob_key(digest), path)
    return metadata_sha, repaired


def _release_exists(session: Session, parsed: Filename) -> bool:
    return session.scalar(
        select(Release.id).join(Project, Project.id == Release.project_id)
        .where(Project.normalized == parsed.name, Release.canonical_version == release_key(parsed.version))) is not None


def _insert(session: Session, principal: Principal, owner_name: str | None, project_name: str,
            staged: StagedFile, parsed: Filename, meta: CoreMetadata, metadata_sha: str | None,
            reserved: list[str], readme: release_readme.RenderedReadme | None) -> bool:
    project = _authorize(session, principal, owner_name, parsed.name, reserved)
    if _existing_file(session, staged) is not None:
        return False
    if project is None:
        owner = _target_owner(session, principal, owner_name)
        project = Project(owner_id=owner.id, name=project_name, normalized=parsed.name, private=False,
                          quarantined=False)
        session.add(project)
        session.flush()
    # One release per PEP 440 version however it is spelt: a file of 0.1 joins the release 0.1.0 (and is
    # checked on its own, services/server_checks.py), never starts a second release of the same version.
    canonical = release_key(parsed.version)
    release = session.scalar(
        select(Release).where(Release.project_id == project.id, Release.canonical_version == canonical))
    if release is None:
        release = Release(
            project_id=project.id, version=str(parsed.version), canonical_version=canonical, yanked=False,
            yanked_reason="",
            requires_python=meta.requires_python, summary=meta.summary, description=meta.description,
            description_content_type=meta.description_content_type, keywords=meta.keywords,
            # None only if the release existed when this upload looked: its first page view renders it
            **(release_readme.columns(readme) if readme is not None else {}),
        )
        session.add(release)
        session.flush()
    token = session.get(Token, principal.token_id)
    if token is not None:
        token.last_used_at = utcnow()
    file = File(
        release_id=release.id, filename=staged.filename, packagetype=parsed.packagetype, size=staged.size,
        sha256=staged.sha256, blake2_256=staged.blake2_256, requires_python=meta.requires_python,
        metadata_sha256=metadata_sha, uploaded_by_id=principal.user_id,
    )
    session.add(file)
    if parsed.packagetype == "bdist_wheel":  # the worker checks it in a sandbox (services/server_checks.py)
        session.flush()
        server_checks.enqueue_contract(session, release, file)
    card_tags.refresh(session, project.id)
    return True


def publish(db: Database, storage: Storage, principal: Principal, fields: dict[str, str], staged: StagedFile,
            *, owner_name: str | None = None, reserved: list[str] | None = None,
            max_unpacked: int = DEFAULT_MAX_UNPACKED) -> Outcome:
    """Check, store and record one uploaded file (see the module docstring for the order of steps)."""
    reserved = reserved or []
    try:
        parsed, meta = check_upload(fields, staged, max_unpacked)
        with db.read() as session:  # refuse early, before any blob is written
            _authorize(session, principal, owner_name, parsed.name, reserved)
            identical = _existing_file(session, staged) is not None
            new_release = not _release_exists(session, parsed)
        if identical:  # a no-op, except that the good bytes repair a damaged stored copy
            _metadata, repaired = _store_blobs(db, storage, staged, meta, parsed, check_stored=True)
            return Outcome(parsed.name, str(parsed.version), staged.filename, created=False, repaired=repaired)
        readme = release_readme.render(meta.description, meta.description_content_type) if new_release else None
        metadata_sha, _repaired = _store_blobs(db, storage, staged, meta, parsed, check_stored=False)
        for attempt in range(_COMMIT_ATTEMPTS):
            try:
                with db.write() as session:
                    created = _insert(session, principal, owner_name, meta.display_name, staged, parsed, meta,
                                      metadata_sha, reserved, readme)
                return Outcome(parsed.name, str(parsed.version), staged.filename, created)
            except IntegrityError:
                # Another worker created the same project, release or file at the same moment:
                # the next attempt sees its row and decides (no-op, conflict, or insert).
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")
    finally:
        staged.path.unlink(missing_ok=True)
