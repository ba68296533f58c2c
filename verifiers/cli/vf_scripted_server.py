"""``vf-scripted-server``: the scripted OpenAI-compatible server as a process.

Prints ``READY <base_url>`` on stdout once listening and serves until SIGTERM/SIGINT::

    vf-scripted-server --policy reverse:0.2 --port 0
    python -m verifiers.cli.vf_scripted_server --policy tools:2 --fail-first 2 --fail-status 503
"""

from __future__ import annotations

import asyncio
import errno
import signal

import typer

from verifiers.errors import UsageError
from verifiers.testing import ByteTokenizer, ScriptedServer

app = typer.Typer(add_completion=False, help="Serve a scripted OpenAI-compatible model on 127.0.0.1.")


@app.command()
def serve(
    policy: str = typer.Option("echo", help="echo | reverse[:p] | tools[:N] | turns[:N] | script:FILE | math:FILE"),
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(0, help="Port; 0 picks a free one (read it from the READY line)."),
    model: str = typer.Option("scripted", help="Model name listed by /v1/models."),
    delay_ms: float = typer.Option(0.0, help="Wait this long before every generation answer."),
    fail_first: int = typer.Option(0, help="Answer the first N generation requests with --fail-status."),
    fail_status: int = typer.Option(503, help="HTTP status of the injected failures."),
    template: str = typer.Option("chatml", help="Chat template for token ids: chatml | qwen3."),
) -> None:
    if template not in ("chatml", "qwen3"):
        raise typer.BadParameter("--template must be chatml or qwen3")
    try:
        server = ScriptedServer(
            policy, host=host, port=port, model=model, delay_s=delay_ms / 1000, fail_first=fail_first,
            fail_status=fail_status, tokenizer=ByteTokenizer(template),
        )
    except UsageError as e:
        raise typer.BadParameter(str(e)) from None
    try:
        asyncio.run(_serve(server))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        typer.echo(f"error: port {port} on {host} is in use; choose another with --port (0 picks a free one)",
                   err=True)
        raise typer.Exit(1) from None


async def _serve(server: ScriptedServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server.serving() as base_url:
        print(f"READY {base_url}", flush=True)
        await stop.wait()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
