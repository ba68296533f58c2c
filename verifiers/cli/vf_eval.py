"""``vf-eval ENV_ID``: evaluate an environment against an OpenAI-compatible API.

Every option is a field of :class:`verifiers.eval.run.EvalConfig` (its help is
the field's description). Results stream to ``results.jsonl`` in the run
folder; ``-R/--resume [RUN_DIR]`` continues a killed run with its own model, server
and sampling (the newest run of this env, and of ``-m`` if given, when no folder is
given). ``--push`` then puts the finished run on the environment's Hub leaderboard
(``verifiers.eval.push``).

Where the model is served (``verifiers.eval.endpoints``): ``-e/--endpoints-path``
names a registry, so ``-m NAME`` takes the model id, base URL and key variable of
its entry (a TOML file is read as data; a ``.py`` file defining ``ENDPOINTS`` is
*executed*, so use only your own; default ``./configs/endpoints.toml``, else
``./configs/endpoints.py``). ``-p/--provider`` (openai, openrouter, together,
deepseek, fireworks, groq, prime, local, vllm) sets the base URL and key variable.
Precedence: ``-b``/``-k`` > ``-p`` > the registry entry > the defaults.

``vf-eval FILE.toml`` reads the options from a config file of EvalConfig fields,
one eval or several ``[[eval]]`` tables (``verifiers.eval.config_file``); flags
given on the command line win over it (command line > file > the environment's
``[tool.verifiers.eval]`` > built-in defaults). ``-C/--state-columns a,b`` saves
those State keys in every results line; ``--save-dataset DIR`` also writes the
results as a Hugging Face dataset (``datasets.load_from_disk(DIR)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from verifiers.errors import Error, UsageError
from verifiers.eval.config import EvalConfig, config_problems
from verifiers.eval.config_file import is_config_file, load_eval_file
from verifiers.eval.endpoints import PROVIDERS, resolve_endpoint
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


@contextlib.contextmanager
def _usage_errors(console: Console) -> Iterator[None]:
    """A usage problem inside the block is printed as one line per problem and ends vf-eval with status 2."""
    try:
        yield
    except ValidationError as error:
        _print_invalid(error, console)
        raise typer.Exit(2) from None
    except (Error, ValueError) as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from None


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


@app.command()
def eval_command(
    ctx: typer.Context,
    env_id: str = typer.Argument(..., help=f"{_help('env_id')} Or FILE.toml: a config file of these options' "
                                 "fields (see the module docs); flags given here win over it."),
    env_args: str | None = typer.Option(None, "--env-args", "-a", help=_help("env_args")),
    model: str | None = typer.Option(None, "--model", "-m", help=_help("model"), show_default=_default("model")),
    endpoints_path: Path | None = typer.Option(None, "--endpoints-path", "-e", help=_help("endpoints_path"),
                                               show_default=False),
    provider: str | None = typer.Option(None, "--provider", "-p", help=_help("provider")),
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
    state_columns: str | None = typer.Option(None, "--state-columns", "-C", help=_help("state_columns")),
    save_dataset: Path | None = typer.Option(None, "--save-dataset", help=_help("save_dataset")),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", help=_help("output_dir")),
    save_results: bool = typer.Option(True, "--save-results", "-s",
                                      help="Results are always saved (kept for compatibility)."),
    resume: str | None = typer.Option(None, "--resume", "-R",
                                      help="Continue a run: its folder, or nothing for the newest run of this env "
                                           "(and of -m, if given). It keeps the run's model, server, sampling and "
                                           "rows; -p, -b, -k, --header, -c and --save-dataset given here replace "
                                           "the saved ones. Groups with an errored rollout run again."),
    pass_threshold: float = typer.Option(0.5, "--pass-threshold", help=_help("pass_threshold")),
    independent_scoring: bool = typer.Option(False, "--independent-scoring", "-i", help=_help("independent_scoring")),
    timeout: float = typer.Option(600.0, "--timeout", help=_help("timeout")),
    scoring_timeout: float | None = typer.Option(None, "--scoring-timeout", help=_help("scoring_timeout"),
                                                 show_default=False),
    max_reply_bytes: int | None = typer.Option(None, "--max-reply-bytes", help=_help("max_reply_bytes"),
                                               show_default=_default("max_reply_bytes")),
    max_retries: int = typer.Option(3, "--max-retries", help=_help("max_retries")),
    coalesce_requests: bool = typer.Option(False, "--coalesce-requests", help=_help("coalesce_requests")),
    show_samples: int = typer.Option(3, "--show-samples", min=0, help="Sample rollouts printed before the "
                                     "table (the first of each of that many examples; 0: none)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    push: bool = typer.Option(False, "--push",
                              help=f"Put the finished run on the Hub leaderboard (token: ${TOKEN_VAR})."),
    hub: str | None = typer.Option(None, "--hub", help=_push_help("hub")),
) -> None:
    """Evaluate ENV_ID (or every eval of a FILE.toml) with MODEL and print a summary; results go to a run folder."""
    console = Console(stderr=False)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with _usage_errors(console):
        # The EvalConfig fields this command line gives; a config file or the environment's table fills the rest.
        options = {"env_args": env_args, "model": model, "endpoints_path": endpoints_path, "provider": provider,
                   "api_base_url": api_base_url, "api_key_var": api_key_var, "headers": header or None,
                   "num_examples": num_examples, "rollouts_per_example": rollouts_per_example,
                   "max_concurrent": max_concurrent, "max_concurrent_scoring": max_concurrent_scoring,
                   "max_tokens": max_tokens, "temperature": temperature, "sampling_args": sampling_args,
                   "state_columns": state_columns, "save_dataset": save_dataset, "output_dir": output_dir,
                   "pass_threshold": pass_threshold, "independent_scoring": independent_scoring,
                   "timeout": timeout, "scoring_timeout": scoring_timeout, "max_retries": max_retries,
                   "max_reply_bytes": max_reply_bytes,
                   "coalesce_requests": coalesce_requests}
        flags = _command_line_fields(ctx, options)
        push_config = PushConfig(hub=hub)
        if push and not os.environ.get(TOKEN_VAR):
            raise UsageError(f"--push needs an API token: set {TOKEN_VAR} (vf-hub token create --permission publish)")
        configs: list[tuple[EvalConfig, Path | None]]  # each eval and the run folder it continues, if any
        if resume is not None:
            if is_config_file(env_id):
                raise UsageError("-R/--resume takes an environment id, not a config file")
            configs = [_resumed_config(env_id, resume, flags)]
        else:
            configs = [_eval_config(fields, flags) for fields in _evals(env_id)]
            _check_distinct_datasets(configs)
    exit_code = 0
    for number, (config, run_dir) in enumerate(configs, start=1):
        if len(configs) > 1:
            console.rule(f"eval {number} of {len(configs)}: {escape(config.env_id)}")
        try:
            _run_and_report(config, run_dir, resume is not None, console, show_samples,
                            push_config if push else None)
        except typer.Exit as stop:
            if stop.exit_code == 2 or len(configs) == 1:
                raise
            exit_code = max(exit_code, stop.exit_code)  # a failed eval does not stop the next one
    if exit_code:
        raise typer.Exit(exit_code)


def _command_line_fields(ctx: typer.Context, options: dict[str, Any]) -> dict[str, Any]:
    """The :class:`EvalConfig` fields typed on the command line (not defaults), parsed."""
    param_names = {"headers": "header"}
    given = {field: value for field, value in options.items()
             if value is not None and _on_command_line(ctx, param_names.get(field, field))}
    for field, flag in (("env_args", "--env-args"), ("sampling_args", "--sampling-args")):
        if field in given:
            given[field] = _json_object(given[field], flag)
    if "state_columns" in given:
        given["state_columns"] = given["state_columns"].split(",")
    return given


def _on_command_line(ctx: typer.Context, param: str) -> bool:
    source = ctx.get_parameter_source(param)
    return source is not None and source.name == "COMMANDLINE"  # typer may bring its own click's enum


def _evals(env_id: str) -> list[dict[str, Any]]:
    """The fields of each eval to run: a config file's, or just the environment id."""
    if is_config_file(env_id):
        return load_eval_file(Path(env_id))
    return [{"env_id": env_id}]


def _eval_config(fields: dict[str, Any], flags: dict[str, Any]) -> tuple[EvalConfig, None]:
    """One eval's config: command line > config file > the environment's table > built-in defaults."""
    if "provider" in flags:
        # -p here stands for the server as a whole: the file's own URL and key give way to it
        fields = {k: v for k, v in fields.items() if k not in ("api_base_url", "api_key_var")}
    given = {**fields, **flags}
    given.setdefault("env_args", {})
    config = EvalConfig(**_env_defaults(given["env_id"]) | given)
    return resolve_endpoint(config), None


def _resumed_config(env_id: str, resume: str, flags: dict[str, Any]) -> tuple[EvalConfig, Path]:
    """The config saved in the run folder, with how to reach the server now taken from the command line."""
    from verifiers.eval.run import load_run_config

    config = EvalConfig(env_id=env_id, **{k: v for k, v in flags.items() if k in ("model", "output_dir")})
    run_dir = _latest_run(config, flags.get("model")) if resume == _LATEST else Path(resume)
    saved = load_run_config(run_dir)
    if parse_env_id(saved.env_id).name != parse_env_id(env_id).name:
        raise UsageError(f"{run_dir} is a run of {saved.env_id}, not of {env_id}")
    # The run's model, server, sampling and rows come from its folder; how to reach the server now, and where
    # to put its dataset, may come from this command line.
    replaced = {k: v for k, v in flags.items()
                if k in ("provider", "api_base_url", "api_key_var", "headers", "max_concurrent", "save_dataset")}
    if "provider" in replaced:
        EvalConfig(env_id=env_id, provider=replaced["provider"])  # an unknown name is refused, naming -p
        chosen = PROVIDERS[replaced["provider"]]
        replaced = {"api_base_url": chosen.url, "api_key_var": chosen.key} | replaced
    return EvalConfig.model_validate({**saved.model_dump(), **replaced}), run_dir


def _check_distinct_datasets(configs: list[tuple[EvalConfig, Path | None]]) -> None:
    folders = [config.save_dataset for config, _ in configs if config.save_dataset is not None]
    if len(folders) != len(set(folders)):
        raise UsageError("--save-dataset: several evals would write the same folder; give each eval its own "
                         "save_dataset in the config file")


def _run_and_report(config: EvalConfig, run_dir: Path | None, resume: bool, console: Console, show_samples: int,
                    push_config: PushConfig | None) -> None:
    """Run one eval, print its samples and summary, report failures, push when asked."""
    with _usage_errors(console):
        outputs, metadata, run_dir = _run_with_progress(config, run_dir, resume, console)
    from verifiers.eval.summary import render_samples, render_summary

    render_samples(outputs, console, show_samples)
    render_summary(outputs, metadata, console)
    console.print(f"results: {run_dir / 'results.jsonl'}\nmetadata: {run_dir / 'metadata.json'}")
    if config.save_dataset is not None:
        console.print(f"dataset: {config.save_dataset}")
    _report_failures(outputs, metadata)
    if push_config is not None:
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
        answer = push_run(metadata, summary_text(outputs, metadata), config, outputs=outputs)
    except Error as error:
        console.print(f"[bold red]push failed[/] (the results above are saved): {escape(str(error))}")
        raise typer.Exit(1) from None
    console.print(f"pushed to {answer['owner']}/{answer['project']}@{answer['version']} with "
                  f"{answer.get('rollouts', 0)} of {len(outputs)} rollouts: {answer['url']}")


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
