"""``vf-hub admin ...`` (offline administration, on the database and the blob store) and ``vf-hub worker check``
(the Hub's own checks, a process beside the index): the operator's commands."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer

from hub_server.cli.hub_options import DataDirOpt, DbOpt, _fail, _help, _settings
from hub_server.errors import BadRequest, HubError

admin_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                        help="Offline administration (on the database).")
worker_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                         help="The Hub's own checks, run beside the index (never inside it).")


@admin_app.command("create-user")
def create_user(name: Annotated[str, typer.Argument(help="User name (lowercase letters, digits, '-').")],
                data_dir: DataDirOpt = None, database_url: DbOpt = None) -> None:
    """Create a user; prints its first API token (publish, all its projects) alone on the last line."""
    from hub_server.db import Database
    from hub_server.services.accounts import create_user as create

    settings = _settings(data_dir, database_url)
    db = Database(settings.resolved_database_url())
    try:
        db.migrate()
        with db.write() as session:
            _user, token = create(session, name, dt.timedelta(days=settings.token_ttl_days))
    except HubError as error:
        raise _fail(error) from None
    finally:
        db.dispose()
    typer.echo(f"Created user {name}. Its API token (shown once; expires in {settings.token_ttl_days} days):")
    typer.echo(token)


@admin_app.command("create-org")
def create_org(name: Annotated[str, typer.Argument(help="Organisation name.")],
               admin: Annotated[str | None, typer.Option(help="A user to make its first admin.")] = None,
               data_dir: DataDirOpt = None, database_url: DbOpt = None) -> None:
    """Create an organisation (an owner whose members may publish under it)."""
    from hub_server.services.accounts import create_org as create

    _offline(data_dir, database_url, lambda s: create(s, name, admin))
    typer.echo(f"Created organisation {name}")


@admin_app.command("add-member")
def add_member(org: Annotated[str, typer.Argument(help="Organisation name.")],
               user: Annotated[str, typer.Argument(help="User name.")],
               role: Annotated[str, typer.Option(help="admin or member.")] = "member",
               data_dir: DataDirOpt = None, database_url: DbOpt = None) -> None:
    """Add a user to an organisation (or change their role)."""
    from hub_server.services.accounts import add_member as add

    _offline(data_dir, database_url, lambda s: add(s, org, user, role))
    typer.echo(f"{user} is now {role} of {org}")


@admin_app.command("quarantine")
def quarantine(name: Annotated[str, typer.Argument(help="Project name.")],
               undo: Annotated[bool, typer.Option("--undo", help="Lift the quarantine.")] = False,
               data_dir: DataDirOpt = None, database_url: DbOpt = None) -> None:
    """Hide a project from every index and page (or show it again with --undo)."""
    from hub_server.services.catalog import set_quarantined

    _offline(data_dir, database_url, lambda s: set_quarantined(s, name, not undo))
    typer.echo(f"{name}: {'visible again' if undo else 'quarantined'}")


@admin_app.command("gc")
def gc(grace_hours: Annotated[float, typer.Option(
           min=0.0, help="Only blobs stored longer ago than this are candidates, so uploads in flight "
                         "(blob stored, rows not yet committed) are never touched.")] = 24.0,
       dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")] = False,
       keep_deleted: Annotated[bool, typer.Option(
           "--keep-deleted", help="Keep the blobs of deleted files too (by default a file deleted longer ago "
                                  "than the grace period no longer keeps its blobs).")] = False,
       data_dir: DataDirOpt = None, database_url: DbOpt = None,
       storage_url: Annotated[str | None, typer.Option(help=_help("storage_url"))] = None) -> None:
    """Delete stored blobs no live file references: left by failed uploads, or by files deleted since."""
    from hub_server.services.gc import collect_garbage

    report = _with_storage(data_dir, database_url, storage_url, lambda db, storage: collect_garbage(
        db, storage, dt.timedelta(hours=grace_hours), dry_run=dry_run, keep_deleted=keep_deleted))
    for blob in report.deleted:
        typer.echo(f"{'would delete' if dry_run else 'deleted'} {blob.key} ({blob.size} bytes)")
    typer.echo(f"{len(report.deleted)} unreferenced blob(s), {report.freed_bytes} bytes"
               f"{' (dry run: nothing deleted)' if dry_run else ' deleted'}; {report.referenced} referenced, "
               f"{report.too_young} younger than {grace_hours:g} h, {report.ignored} other key(s) left alone")


@admin_app.command("verify")
def verify(dry_run: Annotated[bool, typer.Option("--dry-run", help="Report damage; mark nothing.")] = False,
           data_dir: DataDirOpt = None, database_url: DbOpt = None,
           storage_url: Annotated[str | None, typer.Option(help=_help("storage_url"))] = None) -> None:
    """Re-hash every stored blob; quarantine corrupt and missing ones (never deletes). Exit 1 if any."""
    from hub_server.services.verify import verify_blobs

    report = _with_storage(data_dir, database_url, storage_url,
                           lambda db, storage: verify_blobs(db, storage, dry_run=dry_run))
    for damage in report.damaged:
        found = f" (its bytes hash to {damage.found_sha256})" if damage.found_sha256 else ""
        typer.echo(f"{damage.problem} {damage.sha256}{found}{'' if dry_run else ': quarantined'}")
    for digest in report.restored:
        typer.echo(f"restored {digest}: whole again, served again")
    typer.echo(f"{report.examined} blob(s) re-hashed: {report.intact} intact, {len(report.damaged)} damaged"
               f"{' (dry run: nothing marked)' if dry_run else ''}; {report.ignored} other key(s) left alone")
    if not report.clean:
        raise typer.Exit(code=1)


def _with_storage(data_dir: Path | None, database_url: str | None, storage_url: str | None, action: Any) -> Any:
    """``action(db, storage)`` on the Hub's migrated database and its blob storage; a HubError exits cleanly."""
    from hub_server.db import Database
    from hub_server.storage import open_storage

    settings = _settings(data_dir, database_url)
    if storage_url is not None:
        settings = settings.model_copy(update={"storage_url": storage_url})
    db = Database(settings.resolved_database_url())
    try:
        db.migrate()
        return action(db, open_storage(settings.resolved_storage_url(), staging=settings.data_dir / "staging"))
    except HubError as error:
        raise _fail(error) from None
    finally:
        db.dispose()


def _offline(data_dir: Path | None, database_url: str | None, action: Any) -> None:
    from hub_server.db import Database

    db = Database(_settings(data_dir, database_url).resolved_database_url())
    try:
        db.migrate()
        with db.write() as session:
            action(session)
    except HubError as error:
        raise _fail(error) from None
    finally:
        db.dispose()


@worker_app.command("check")
def worker_check(
        image_dir: Annotated[Path | None, typer.Option(
            help="Where to build the sandboxes' read-only image of the SDK (default: DATA_DIR/check-image; it and "
                 "its parents must be searchable by everyone).")] = None,
        time_limit: Annotated[float, typer.Option(min=10.0, help="Seconds a check may take, sandbox start to "
                                                               "report; past it the version fails.")] = 300.0,
        poll: Annotated[float, typer.Option(min=0.1, help="Seconds between looks at an empty queue.")] = 2.0,
        lease: Annotated[float, typer.Option(min=1.0, help="Seconds a claimed check stays a worker's: one still "
                                                           "running after this is taken back from a worker that "
                                                           "died (3 starts at most). Keep it above --time-limit."
                                             )] = 1800.0,
        until_idle: Annotated[bool, typer.Option("--until-idle", help="Stop once the queue is empty.")] = False,
        data_dir: DataDirOpt = None, database_url: DbOpt = None,
        storage_url: Annotated[str | None, typer.Option(help=_help("storage_url"))] = None) -> None:
    """Run queued checks: each new version's wheel (install, load, rollouts) and pushed results' re-scoring,
    each in a fresh local sandbox without network."""
    if lease <= time_limit:
        raise _fail(BadRequest(f"--lease ({lease:g} s) must be longer than --time-limit ({time_limit:g} s), or a "
                               "check still running would be taken by a second worker"))
    import asyncio
    import logging

    from hub_server.worker.image import build_image
    from hub_server.worker.loop import WorkerConfig, serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    image = (image_dir or _settings(data_dir, database_url).data_dir / "check-image").absolute()
    image.mkdir(parents=True, exist_ok=True)
    build_image(image)
    config = WorkerConfig(image_dir=image, time_limit_s=time_limit, poll_s=poll, stale_after_s=lease)
    _with_storage(data_dir, database_url, storage_url,
                  lambda db, storage: asyncio.run(serve(db, storage, config, until_idle=until_idle)))


__all__ = ["admin_app", "worker_app"]
