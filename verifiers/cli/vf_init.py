"""``vf-init NAME``: create a new environment package (see :mod:`verifiers.scaffold`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verifiers.errors import UsageError
from verifiers.scaffold import init_environment, parse_env_name

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="Environment id, e.g. 'my-env' (folder and module: my_env).")],
    path: Annotated[Path, typer.Option("--path", "-p", help="Folder that holds environment packages.")] = Path(
        "environments"
    ),
    multi_file: Annotated[
        bool, typer.Option("--multi-file", help="Write a package directory instead of a single module.")
    ] = False,
    rewrite_readme: Annotated[
        bool, typer.Option("--rewrite-readme", help="If the package exists, regenerate only its README.md.")
    ] = False,
) -> None:
    """Create a pip-installable environment package that runs right away."""
    try:
        env = parse_env_name(name)
        existed = (path / env.module).exists()
        root = init_environment(name, path, multi_file=multi_file, rewrite_readme=rewrite_readme)
    except (UsageError, OSError) as exc:
        typer.echo(f"vf-init: error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    if existed:
        typer.echo(f"Rewrote {root / 'README.md'}")
        return
    typer.echo(f"Created {root}\n")
    typer.echo("Next steps:")
    typer.echo(f"  pip install -e '{root}[test]'")
    typer.echo(f"  python -m pytest {root / 'tests'}")  # this venv's pytest, never another one on PATH
    typer.echo(f"  vf-eval {env.dist}")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
