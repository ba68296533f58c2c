"""``vf-eval ENV_ID``: evaluate an environment against an OpenAI-compatible API.

Every option is a field of :class:`verifiers.eval.run.EvalConfig` (its help is
the field's description). Results stream to ``results.jsonl`` in the run
folder; ``-R/--resume [RUN_DIR]`` continues a killed run with its own model, server
and sampling (the newest run of this env, and of ``-m`` if given, when no folder is
given). ``--push`` then puts the finished run on the environment's Hub leaderboard
(``verifiers.eval.push``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from verifiers.errors import Error, UsageError
from verifiers.eval.config import EvalConfig, config_problems
from verifiers.eval.push import TOKEN_VAR, PushConfig
from verifiers.loading import parse_env_id

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
_LATEST = "latest"


def _help(field: str) -> str:
    return EvalConfig.model_fields[field].description or ""


def _default_help(field: str) -> str:
    default = EvalConfig.model_fields[field].default
    return f"{_help(field)} [default: the environment's [tool.verifiers.eval] {field}, else {default}]"


def _push_help(field: str) -> str:
    return PushConfig.model_fields[field].description or ""


def _json_object(text: str | None, flag: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{flag} must be a JSON object: {error.msg} at position {error.pos} in {text!r}") from error
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object like '{{\"key\": 1}}', got {type(value).__name__}")
    return value


def _env_defaults(env_id: str) -> dict[str, Any]:
    """The environment's ``[tool.verifiers.eval]`` values, checked here so an error names their file."""
    from verifiers.eval.env_defaults import eval_defaults

    defaults = eval_defaults(env_id)
    try:
        EvalConfig(env_id=env_id, **defaults.values)
    except ValidationError as error:
        problems = "; ".join(f"{field}: {text}" for field, text in config_problems(error))
        raise UsageError(f"{defaults.source}: bad [tool.verifiers.eval] value ({problems})") from None
    return defaults.values


def _flag(field: str) -> str:
    """The option that sets an :class:`EvalConfig` field, as ``-n/--num-examples``, for error messages."""
    top = field.split(".", 1)[0]  # "headers.0": an item of a list field
    param_name = {"headers": "header"}.get(top, top)
    for param in typer.main.get_command(app).params:
        if param.name == param_name:
            return "/".join(sorted(param.opts, key=len))
    return field


def _print_invalid(error: ValidationError, console: Console) -> None:
    """One line per bad value, naming its flag and the valid range (never pydantic's own text and URL)."""
    # Only EvalConfig's fields are flags; another model's error (from inside an environment) keeps its own names.
    name = _flag if error.title == EvalConfig.__name__ else (lambda field: f"{error.title}.{field}")
    for field, text in config_problems(error):
        console.print(f"[bold red]error:[/] {escape(name(field))} {escape(text)}")


def _latest_run(config: EvalConfig, model: str | None) -> Path:
    """The newest run folder of ``config``'s environment (and of ``model``, when the command names one)."""
    from verifiers.eval.run import new_run_dir

    parent = new_run_dir(config).parent.parent
    pattern = f"{parse_env_id(config.env_id).name}--{model.replace('/', '--') if model else '*'}/*"
    runs = sorted((p for p in parent.glob(pattern) if (p / "metadata.json").is_file()),
                  key=lambda p: p.stat().st_mtime)
    if not runs:
        which = f"{config.env_id} with model {model}" if model else config.env_id
        raise UsageError(f"no run of {which} to resume under {parent}")
    return runs[-1]


def _default(field: str) -> str:
    return str(EvalConfig.model_fields[field].default)


def _given(**options: Any) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


@app.command()
def eval_command(
    env_id: str = typer.Argument(..., help=_help("env_id")),
    env_args: str | None = typer.Option(None, "--env-args", "-a", help=_help("env_args")),
    model: str | None = typer.Option(None, "--model", "-m", help=_help("model"), show_default=_default("model")),
    api_base_url: str | None = typer.Option(None, "--api-base-url", "-b", help=_help("api_base_url"),
                                            show_default=_default("api_base_url")),
    api_key_var: str | None = typer.Option(None, "--api-key-var", "-k", help=_help("api_key_var"),
                                           show_default=_default("api_key_var")),
    header: list[str] = typer.Option([], "--header", help=_help("headers")),
    num_examples: int | None = typer.Option(None, "--num-examples", "-n", help=_default_help("num_examples"),
                                            show_default=False),
    rollouts_per_example: int | None = typer.Option(None, "--rollouts-per-example", "-r",
                                                    help=_default_help("rollouts_per_example"), show_default=False),
    max_concurrent: int | None = typer.Option(None, "--max-concurrent", "-c", help=_default_help("max_concurrent"),
                                              show_default=False),
    max_concurrent_scoring: int | None = typer.Option(None, "--max-concurrent-scoring",
                                                      help=_help("max_concurrent_scoring")),
    max_tokens: int | None = typer.Option(None, "--max-tokens", "-t", help=_help("max_tokens")),
    temperature: float | None = typer.Option(None, "--temperature", "-T", help=_help("temperature")),
    sampling_args: str | None = typer.Option(None, "--sampling-args", "-S", help=_help("sampling_args")),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", help=_help("output_dir")),
    save_results: bool = typer.Option(True, "--save-results", "-s",
                                      help="Results are always saved (kept for compatibility)."),
    resume: str | None = typer.Option(None, "--resume", "-R",
                                      help="Continue a run: its folder, or nothing for the newest run of this env "
                                           "(and of -m, if given). It keeps the run's model, server, sampling and "
                                           "rows; -b, -k, --header and -c given here replace the saved ones. "
                                           "Groups with an errored rollout run again."),
    pass_threshold: float = typer.Option(0.5, "--pass-threshold", help=_help("pass_threshold")),
    independent_scoring: bool = typer.Option(False, "--independent-scoring", "-i", help=_help("independent_scoring")),
    timeout: float = typer.Option(600.0, "--timeout", help=_help("timeout")),
    max_retries: int = typer.Option(3, "--max-retries", help=_help("max_retries")),
    coalesce_requests: bool = typer.Option(False, "--coalesce-requests", help=_help("coalesce_requests")),
    show_samples: int = typer.Option(3, "--show-samples", min=0, help="Sample rollouts printed before the "
                                     "table (the first of each of that many examples; 0: none)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    push: bool = typer.Option(False, "--push",
                              help=f"Put the finished run on the Hub leaderboard (token: ${TOKEN_VAR})."),
    hub: str | None = typer.Option(None, "--hub", help=_push_help("hub")),
) -> None:
    """Evaluate ENV_ID with MODEL and print a summary; results go to a run folder."""
    console = Console(stderr=False)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        given = {"num_examples": num_examples, "rollouts_per_example": rollouts_per_example,
                 "max_concurrent": max_concurrent, "max_tokens": max_tokens, "temperature": temperature,
                 "sampling_args": _json_object(sampling_args, "--sampling-args")}
        # how to reach the server, as far as this command line says (a resumed run keeps the rest of its own)
        connection = _given(api_base_url=api_base_url, api_key_var=api_key_var, headers=header or None)
        config = EvalConfig(
            env_id=env_id, env_args=_json_object(env_args, "--env-args") or {}, **_given(model=model), **connection,
            max_concurrent_scoring=max_concurrent_scoring, output_dir=output_dir,
            pass_threshold=pass_threshold, independent_scoring=independent_scoring, timeout=timeout,
            max_retries=max_retries, coalesce_requests=coalesce_requests,
            **_env_defaults(env_id) | _given(**given),
        )
        push_config = PushConfig(hub=hub)
        if push and not os.environ.get(TOKEN_VAR):
            raise UsageError(f"--push needs an API token: set {TOKEN_VAR} (vf-hub token create --permission publish)")
        run_dir = None
        if resume is not None:
            from verifiers.eval.run import load_run_config

            run_dir = _latest_run(config, model) if resume == _LATEST else Path(resume)
            saved = load_run_config(run_dir)
            if parse_env_id(saved.env_id).name != parse_env_id(env_id).name:
                raise UsageError(f"{run_dir} is a run of {saved.env_id}, not of {env_id}")
            # The run's model, server, sampling and rows come from its folder; how to reach the server now
            # may come from this command line.
            config = EvalConfig.model_validate({**saved.model_dump(), **connection,
                                                **_given(max_concurrent=max_concurrent)})
        outputs, metadata, run_dir = _run_with_progress(config, run_dir, resume is not None, console)
    except ValidationError as error:
        _print_invalid(error, console)
        raise typer.Exit(2) from None
    except (Error, ValueError) as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None
    from verifiers.eval.summary import render_samples, render_summary

    render_samples(outputs, console, show_samples)
    render_summary(outputs, metadata, console)
    console.print(f"results: {run_dir / 'results.jsonl'}\nmetadata: {run_dir / 'metadata.json'}")
    _report_failures(outputs, metadata)
    if push:
        _push(outputs, metadata, push_config, console)


def _report_failures(outputs: list[dict[str, Any]], metadata: dict[str, Any]) -> None:
    """Failed rollouts on stderr, never only inside results.jsonl; exit 1 when not one rollout succeeded."""
    from verifiers.eval.metadata import rollout_failures

    failures = rollout_failures(outputs)
    if failures is None:
        return
    errors = Console(stderr=True, soft_wrap=True)
    if metadata.get("status") == "failed":
        errors.print(f"[bold red]error:[/] {escape(failures)}")
        raise typer.Exit(1)
    errors.print(f"[bold yellow]warning:[/] {escape(failures)}")


def _push(outputs: list[dict[str, Any]], metadata: dict[str, Any], config: PushConfig, console: Console) -> None:
    from verifiers.eval.push import push_run, summary_text

    try:
        answer = push_run(metadata, summary_text(outputs, metadata), config)
    except Error as error:
        console.print(f"[bold red]push failed[/] (the results above are saved): {escape(str(error))}")
        raise typer.Exit(1) from None
    console.print(f"pushed to {answer['owner']}/{answer['project']}@{answer['version']}: {answer['url']}")


def _run_with_progress(config: EvalConfig, run_dir: Path | None, resume: bool, console: Console) -> Any:
    import datasets

    from verifiers.eval.run import run_eval  # heavy (datasets, openai): only once the flags are valid

    datasets.disable_progress_bars()  # the run has its own progress bar

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task(f"{config.env_id} rollouts", total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return asyncio.run(run_eval(config, run_dir=run_dir, resume=resume, on_progress=update))


def _fill_optional_resume(argv: list[str]) -> list[str]:
    """``-R`` may stand alone (resume the newest run); click needs a value, so give it one."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg in ("-R", "--resume") and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(_LATEST)
    return out


def main() -> None:
    app(args=_fill_optional_resume(sys.argv[1:]), prog_name="vf-eval")


if __name__ == "__main__":
    main()
