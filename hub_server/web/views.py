"""What each page shows, gathered from the services in one read transaction per page.

(The first view of a release whose README was never rendered also stores it, in a write of its own.)
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup
from sqlalchemy.orm import Session

from hub_server.api.simple_render import file_url
from hub_server.auth.principal import Principal
from hub_server.context import Hub
from hub_server.errors import NotFound
from hub_server.eval_command import EvalCommand, eval_command
from hub_server.install_commands import InstallTarget, owner_index_url, pick_file, pip_text, uv_text
from hub_server.services import catalog, evals, server_checks
from hub_server.services.catalog import FileView, ProjectView, ReleaseView
from hub_server.services.downloads import DownloadStats, project_downloads
from hub_server.services.environments import EnvironmentDetails, environment_details, release_ref, sdist_pyproject
from hub_server.services.release_readme import RenderedReadme, release_readme

LEADERBOARD_METRIC_COLUMNS = 4


@dataclass(frozen=True)
class InstallSnippets:
    """The commands a page offers for one version (never with a token in them)."""

    vf_hub: str
    uv: str
    pip: str
    index_url: str


@dataclass(frozen=True)
class EnvironmentPage:
    """Everything the environment page shows for one version."""

    project: ProjectView
    release: ReleaseView | None
    is_latest: bool
    files: list[FileView]
    readme: Markup
    details: EnvironmentDetails
    install: InstallSnippets | None
    eval_command: EvalCommand
    downloads: DownloadStats
    leaderboard: list[evals.LeaderboardRow]  # the best LEADERBOARD_PAGE results
    leaderboard_total: int
    metric_columns: list[str]
    check: server_checks.CheckView | None  # the Hub's own check of this version (None: never checked)


def install_snippets(hub_url: str, prefix: str, project: ProjectView, version: str,
                     files: list[FileView]) -> InstallSnippets | None:
    """The install commands ``hub_server.install_commands`` builds, as text (``None`` without files)."""
    chosen = pick_file([f.filename for f in files])
    file = next((f for f in files if f.filename == chosen), None)
    if file is None:
        return None
    target = InstallTarget(hub_url, project.owner, project.name, version,
                           file_url(prefix, file.sha256, file.filename), file.sha256)
    return InstallSnippets(
        vf_hub=f"vf-hub install {project.owner}/{project.name}@{version}",
        uv=uv_text(target),
        pip=pip_text(target),
        index_url=owner_index_url(hub_url, project.owner),
    )


def _metric_columns(rows: list[evals.LeaderboardRow], details: EnvironmentDetails) -> list[str]:
    """The metrics worth a column: those the environment declares first, then others results report."""
    reported = {name for row in rows for name in row.metrics}
    declared = [m.name for m in details.metrics if m.name in reported]
    extra = sorted(reported - set(declared))
    return (declared + extra)[:LEADERBOARD_METRIC_COLUMNS]


def environment_page(session: Session, hub: Hub, principal: Principal | None, owner: str, name: str,
                     version: str | None, hub_url: str, prefix: str) -> EnvironmentPage:
    """The page of ``owner/name`` at ``version`` (default: the latest, else the newest)."""
    project = catalog.project_view(session, principal, name, owner)
    shown = version or project.shown
    release = next((r for r in project.releases if r.version == shown), None)
    if version is not None and release is None:
        raise NotFound(f"{owner}/{name} has no version {version}")
    files = [f for f in project.files if f.version == shown]
    sdist = next((f for f in files if f.packagetype == "sdist"), None)
    ref = release_ref(session, project.normalized, shown) if shown else None
    # Stored at upload; rendered here only once for a release from before that (then stored).
    readme = release_readme(hub.db, session, ref.id) if ref else RenderedReadme("")
    pyproject = sdist_pyproject(hub.storage, sdist.sha256, sdist.filename) if sdist else None
    details = environment_details(pyproject, readme.tables, ref.keywords if ref else "")
    rows = evals.leaderboard(session, principal, project.normalized, owner, limit=evals.LEADERBOARD_PAGE)
    full = len(rows) == evals.LEADERBOARD_PAGE
    total = evals.count_results(session, principal, project.normalized, owner) if full else len(rows)
    return EnvironmentPage(
        project=project, release=release, is_latest=shown == project.latest, files=files,
        readme=Markup(readme.html),  # sanitised when it was rendered (services/readme_html.py)
        details=details,
        install=install_snippets(hub_url, prefix, project, shown, files) if shown else None,
        eval_command=eval_command(project.name, details.eval_defaults),
        downloads=project_downloads(session, project.normalized),
        leaderboard=rows, leaderboard_total=total, metric_columns=_metric_columns(rows, details),
        check=server_checks.contract_check(session, ref.id) if ref else None,
    )
