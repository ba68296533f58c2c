"""``vf-hub``: run the Environments Hub, administer it, and publish and install environments.

Server side: ``serve``, ``admin ...`` (offline, on the database) and ``worker check``
(:mod:`hub_server.cli.vf_hub_admin`). Client side: ``login``,
``push``, ``install``, ``pull``, ``search``, ``info``, ``yank``/``unyank``, ``token ...``; they reach the
Hub at ``--hub`` or ``VF_HUB_URL``, with the token from ``--token``, ``VF_HUB_TOKEN`` or ``login``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from hub_server.cli.hub_options import DataDirOpt, DbOpt, HubOpt, TokenOpt, _fail, _help
from hub_server.cli.vf_hub_admin import admin_app, worker_app
from hub_server.client import HubClient, build_dists, hub_token, hub_url, read_project, save_login
from hub_server.client.check import check_package
from hub_server.client.info_text import info_text
from hub_server.client.install import INSTALLERS, install_command, redact, resolve_target, run_install
from hub_server.errors import BadRequest, HubError, NotFound
from hub_server.names import check_owner_name, parse_env_ref
from hub_server.settings import Settings

# Help texts are plain text: URLs like s3://BUCKET[/PREFIX] must not be read as rich markup.
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, rich_markup_mode=None)
token_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                        help="Create, list and revoke API tokens.")
app.add_typer(admin_app, name="admin")
app.add_typer(token_app, name="token")
app.add_typer(worker_app, name="worker")
project_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                          help="A project's settings, as its owner.")
app.add_typer(project_app, name="project")


def _client(hub: str | None, token: str | None) -> HubClient:
    return HubClient(hub_url(hub), hub_token(token))


# -- server (serve; the operator's admin and worker commands are in cli/vf_hub_admin.py) ----------


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDirOpt = None,
    database_url: DbOpt = None,
    storage_url: Annotated[str | None, typer.Option(help=_help("storage_url"))] = None,
    public_url: Annotated[str | None, typer.Option(help=_help("public_url"))] = None,
    max_file_size: Annotated[int | None, typer.Option(help=_help("max_file_size"))] = None,
    forwarded_allow_ips: Annotated[str | None, typer.Option(help=_help("forwarded_allow_ips"))] = None,
    workers: Annotated[int, typer.Option(min=1, help="App worker processes sharing the database and storage.")] = 1,
    access_log: Annotated[bool, typer.Option(
        "--access-log/--no-access-log",
        help="Log one line per request (uvicorn's access log). Off saves CPU on busy indexes; "
             "errors and start-up are logged either way.")] = True,
) -> None:
    """Run the Hub (migrates the database first)."""
    import uvicorn

    given = {"data_dir": data_dir, "database_url": database_url, "storage_url": storage_url,
             "public_url": public_url, "max_file_size": max_file_size, "forwarded_allow_ips": forwarded_allow_ips}
    for field, value in given.items():
        if value is not None:  # workers build their Settings from the environment
            os.environ[f"VF_HUB_{field.upper()}"] = str(value)
    try:
        settings = Settings()  # fail here, with a clear message, rather than in every worker
    except ValueError as error:
        raise _fail(error) from None
    if workers > 1 and settings.metrics:
        from hub_server.metrics import share_between_workers

        share_between_workers(settings.data_dir / "metrics")  # /metrics then adds up every worker's counts
    # uvicorn's own proxy-header handling is off (by default it believes anyone on 127.0.0.1): the app
    # applies X-Forwarded-For itself, from forwarded_allow_ips only.
    uvicorn.run("hub_server.app:create_app", factory=True, host=host, port=port, workers=workers,
                log_level="info", proxy_headers=False, access_log=access_log)


# -- client ------------------------------------------------------------------------------------
@app.command()
def login(hub: HubOpt = None,
          token: Annotated[str | None, typer.Option(help="API token (prompted for when omitted).")] = None) -> None:
    """Check a token against the Hub and remember both for later commands."""
    token = token or typer.prompt("API token", hide_input=True)
    url = hub_url(hub)
    try:
        with HubClient(url, token) as client:
            me = client.whoami()
    except HubError as error:
        raise _fail(error) from None
    path = save_login(url, token)
    typer.echo(f"Logged in to {url} as {me['user']} ({me['permission']}); saved to {path}")


@app.command()
def push(
    path: Annotated[Path, typer.Argument(help="Environment package folder (with pyproject.toml).")] = Path("."),
    owner: Annotated[str | None, typer.Option(help="Publish under this owner (an organisation, say).")] = None,
    private: Annotated[bool, typer.Option("--private", help="Create the project private.")] = False,
    no_check: Annotated[bool, typer.Option("--no-check", help="Skip loading it and running one rollout.")] = False,
    no_isolation: Annotated[bool, typer.Option("--no-isolation", help="Build without a fresh build env.")] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
) -> None:
    """Build wheel and sdist (PEP 517), check the package runs, and upload both."""
    try:
        source = read_project(path)
        with _client(hub, token) as client, tempfile.TemporaryDirectory(prefix="vf-hub-push-") as out:
            target_owner = check_owner_name(owner) if owner else client.whoami()["user"]
            exists = _refuse_existing_version(client, target_owner, source.name, source.version)
            dists = build_dists(path, Path(out), isolated=not no_isolation)
            if not no_check:
                wheel = next(p for p in dists if p.suffix == ".whl")
                typer.echo(f"Check passed: one rollout scored {check_package(wheel, source.name):.3f}")
            if private and not exists:
                client.create_project(target_owner, source.name, private=True)
            for dist in dists:
                typer.echo(client.upload(dist, owner))
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"Published {target_owner}/{source.name}@{source.version}")
    typer.echo(f"Install: vf-hub install {target_owner}/{source.name}@{source.version}")


def _refuse_existing_version(client: HubClient, owner: str, name: str, version: str) -> bool:
    """Whether the project exists; refuses a version that is already published."""
    try:
        info = client.info(owner, name)
    except NotFound:
        return False
    if any(v["version"] == version for v in info["versions"]):
        raise BadRequest(f"{owner}/{name}@{version} is already on the Hub and versions never change: "
                         "bump the version in pyproject.toml")
    return True


@app.command()
def install(
    ref: Annotated[str, typer.Argument(help="OWNER/NAME or OWNER/NAME@VERSION.")],
    with_: Annotated[str, typer.Option("--with", help=f"Installer: {', '.join(INSTALLERS)}.")] = "uv",
    python: Annotated[str | None, typer.Option(help="Interpreter to install into (default: this one).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the command instead of running it.")] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
) -> None:
    """Install an exact version from the Hub with pip or uv (a PyPI package of the same name never wins)."""
    try:
        with _client(hub, token) as client:
            target = resolve_target(client, parse_env_ref(ref))
            command = install_command(target, with_, client.token, python or sys.executable)
        if dry_run:
            typer.echo(redact(command, client.token))
            return
        run_install(command)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"Installed {target.name}=={target.version} from {target.hub_url}/{target.owner}")


@app.command()
def pull(
    ref: Annotated[str, typer.Argument(help="OWNER/NAME or OWNER/NAME@VERSION (default: the latest version).")],
    dest: Annotated[Path | None, typer.Option(help="Folder to create (default: ./NAME-VERSION).")] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
) -> None:
    """Download an environment's source (its sdist), check its sha256, and unpack it into a new folder."""
    from hub_server.client.pull import pull as pull_source

    try:
        parsed = parse_env_ref(ref)
        with _client(hub, token) as client:
            version, folder = pull_source(client, parsed, dest)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"Pulled {parsed.owner}/{parsed.name}@{version} into {folder}")


@app.command()
def search(query: Annotated[str, typer.Argument(help="Text in the name, summary or tags.")] = "",
           owner: Annotated[str | None, typer.Option(help="Only this owner's projects.")] = None,
           hub: HubOpt = None, token: TokenOpt = None) -> None:
    """List environments matching a query."""
    try:
        with _client(hub, token) as client:
            projects = client.search(query, owner)
    except HubError as error:
        raise _fail(error) from None
    for p in projects:
        typer.echo(f"{p['owner']}/{p['name']}  {p['latest'] or '-'}  {p['summary']}")


@app.command()
def info(ref: Annotated[str, typer.Argument(help="OWNER/NAME.")], hub: HubOpt = None, token: TokenOpt = None,
         as_json: Annotated[bool, typer.Option("--json", help="The Hub's whole answer as JSON (README "
                                                                "included), for scripts.")] = False) -> None:
    """Show an environment: summary, latest version, install commands, web page, every version."""
    try:
        parsed = parse_env_ref(ref)
        with _client(hub, token) as client:
            project = client.info(parsed.owner, parsed.name)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(json.dumps(project, indent=2) if as_json else info_text(project, hub_url(hub)))


def _yank(ref: str, hub: str | None, token: str | None, undo: bool, reason: str = "") -> None:
    try:
        parsed = parse_env_ref(ref)
        if parsed.version is None:
            raise BadRequest("name the version: OWNER/NAME@VERSION")
        with _client(hub, token) as client:
            if undo:
                client.unyank(parsed.owner, parsed.name, parsed.version)
            else:
                client.yank(parsed.owner, parsed.name, parsed.version, reason)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"{parsed}: {'un-yanked' if undo else 'yanked'}")


@app.command()
def yank(ref: Annotated[str, typer.Argument(help="OWNER/NAME@VERSION.")],
         reason: Annotated[str, typer.Option(help="Shown by pip and uv.")] = "",
         hub: HubOpt = None, token: TokenOpt = None) -> None:
    """Yank a version: unpinned installs skip it, pinned ones still work (PEP 592)."""
    _yank(ref, hub, token, undo=False, reason=reason)


@app.command()
def unyank(ref: Annotated[str, typer.Argument(help="OWNER/NAME@VERSION.")],
           hub: HubOpt = None, token: TokenOpt = None) -> None:
    """Undo a yank."""
    _yank(ref, hub, token, undo=True)


@project_app.command("set-policy")
def project_set_policy(
        ref: Annotated[str, typer.Argument(help="OWNER/NAME.")],
        refuse_failing_checks: Annotated[bool | None, typer.Option(
            "--refuse-failing-checks/--no-refuse-failing-checks",
            help="Yank (or stop yanking) each new version that fails the Hub's own check.")] = None,
        hub: HubOpt = None, token: TokenOpt = None) -> None:
    """Set the owner's policy on versions failing the Hub's own check (install, load, rollouts)."""
    try:
        parsed = parse_env_ref(ref)
        if parsed.version is not None:
            raise BadRequest(f"the policy is the project's, not a version's: name {parsed.owner}/{parsed.name}")
        if refuse_failing_checks is None:
            raise BadRequest("name the policy: --refuse-failing-checks or --no-refuse-failing-checks")
        with _client(hub, token) as client:
            client.set_refuse_failing_checks(parsed.owner, parsed.name, refuse_failing_checks)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"{parsed.owner}/{parsed.name}: " + (
        "versions checked from now on are yanked if they fail the Hub's check" if refuse_failing_checks
        else "versions failing the Hub's check are no longer yanked (those already yanked stay so; vf-hub unyank)"))


@token_app.command("create")
def token_create(
    permission: Annotated[str, typer.Option(help="read or publish.")] = "read",
    owner: Annotated[str | None, typer.Option(help="Limit to one owner's projects.")] = None,
    project: Annotated[str | None, typer.Option(help="Limit to one project.")] = None,
    expires_days: Annotated[int, typer.Option(min=1, max=3650, help="Lifetime in days.")] = 90,
    description: Annotated[str, typer.Option(help="A note to recognise it by.")] = "",
    hub: HubOpt = None, token: TokenOpt = None,
) -> None:
    """Create a token (no wider than the one used); prints it alone on the last line."""
    try:
        with _client(hub, token) as client:
            created = client.create_token(permission, owner, project, expires_days, description)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"Token {created['id']} ({permission}, expires in {expires_days} days; shown once):")
    typer.echo(created["token"])


@token_app.command("list")
def token_list(hub: HubOpt = None, token: TokenOpt = None) -> None:
    """List your tokens (ids and scopes only)."""
    try:
        with _client(hub, token) as client:
            tokens = client.list_tokens()
    except HubError as error:
        raise _fail(error) from None
    for t in tokens:
        state = "revoked" if t["revoked"] else f"expires {t['expires_at'] or 'never'}"
        typer.echo(f"{t['id']}  {t['permission']:<8} {t['project'] or '*'}  {state}  {t['description']}")


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(help="The token's id (12 hex digits after vfh_).")],
                 hub: HubOpt = None, token: TokenOpt = None) -> None:
    """Revoke a token; it stops working at once."""
    try:
        with _client(hub, token) as client:
            client.revoke_token(token_id)
    except HubError as error:
        raise _fail(error) from None
    typer.echo(f"Revoked {token_id}")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
