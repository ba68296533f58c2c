"""``vf-hub info`` for a person: a project's answer from ``GET /api/v1/projects/OWNER/NAME`` as a few lines.

Every value comes from the Hub, so none is trusted on a terminal: control characters (an escape sequence
in a summary could rewrite the screen) are shown as ``\\x1b``-style escapes, and long values are cut.
The README is not printed (it is the web page's job); its length and the page's URL are.
"""

from __future__ import annotations

from typing import Any

_LONGEST = 300
"""Characters of one value shown; the rest is cut with an ellipsis."""


def shown(value: Any, longest: int = _LONGEST) -> str:
    """``value`` as text that is safe on a terminal: printable, one line, at most ``longest`` characters."""
    text = "" if value is None else str(value)
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return safe if len(safe) <= longest else safe[: longest - 1] + "…"


def info_text(project: dict[str, Any], hub: str) -> str:
    """The lines ``vf-hub info`` prints for ``project`` (the REST answer) on the Hub at ``hub``."""
    owner, name = shown(project.get("owner")), shown(project.get("name"))
    lines = [f"{owner}/{name}" + ("  (private)" if project.get("private") else "")]
    if project.get("summary"):
        lines.append(f"  {shown(project['summary'])}")
    lines.append(f"latest:  {shown(project.get('latest') or '- (no version installable: all yanked, or none)')}")
    lines.append(f"page:    {hub.rstrip('/')}/{owner}/{name}")
    lines.append(f"index:   {shown(project.get('index_url'))}")
    for tool, command in (project.get("install") or {}).items():
        lines.append(f"install ({shown(tool)}): {shown(command, longest=1000)}")
    readme = project.get("description") or ""
    if readme:
        lines.append(f"README:  {len(str(readme).splitlines())} lines (on the page; vf-hub info --json has it)")
    versions = project.get("versions") or []
    lines.append(f"versions ({len(versions)}):")
    for release in reversed(versions):  # newest first
        files = release.get("files") or []
        size = sum(int(f.get("size") or 0) for f in files)
        parts = [shown(release.get("version"), 40), shown(str(release.get("created_at") or "")[:10]),
                 f"{len(files)} file{'s' if len(files) != 1 else ''}, {_size(size)}"]
        if release.get("requires_python"):
            parts.append(f"Python {shown(release['requires_python'], 40)}")
        if release.get("yanked"):
            reason = release.get("yanked_reason")
            parts.append("YANKED" + (f": {shown(reason, 120)}" if reason else ""))
        lines.append("  " + "  ".join(parts))
    return "\n".join(lines)


def _size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    return f"{size / 1000:.1f} KB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"


__all__ = ["info_text", "shown"]
