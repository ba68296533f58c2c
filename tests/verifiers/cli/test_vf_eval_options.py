"""vf-eval's endpoint registry, provider shortcuts, config files, state columns and dataset export.

Every test runs the real ``vf-eval`` as a subprocess; those that need a model talk to the
project's scripted OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.verifiers.cli.test_vf_eval import ENV_SOURCE, env_workdir, vf_eval
from verifiers.cli.vf_eval import app
from verifiers.eval.endpoints import PROVIDERS
from verifiers.testing import ScriptedRequest

# Reverses the word and stores an object that is not JSON in the state (for -C).
STATEFUL_ENV = ENV_SOURCE + textwrap.dedent('''
    class _Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    _load = load_environment

    def load_environment(num_examples: int = 8):
        env = _load(num_examples)
        setup = env.setup_state

        async def setup_state(state, **kwargs):
            state = await setup(state, **kwargs)
            state["opaque"], state["note"] = _Opaque(), {"word": state["answer"]}
            return state

        env.setup_state = setup_state
        return env
''')


class Recorder:
    """Reverses each word; remembers the model and key of every request."""

    def __init__(self) -> None:
        self.models: list[str] = []
        self.keys: list[str] = []

    def __call__(self, request: ScriptedRequest) -> str:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.models.append(request.model)
        self.keys.append(headers.get("authorization", "").removeprefix("Bearer "))
        return request.last_user_text[::-1]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return env_workdir(tmp_path, STATEFUL_ENV)


def _runs(workdir: Path, root: str = "outputs") -> list[Path]:
    return sorted((workdir / root / "evals").glob("*/*"))


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _meta(run: Path) -> dict:
    return json.loads((run / "metadata.json").read_text())


def _recording_server(serve) -> tuple[Recorder, str]:
    recorder = Recorder()
    return recorder, serve(recorder)


# -- -e/--endpoints-path ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_toml_registry_entry_sets_model_url_and_key(workdir: Path, serve) -> None:
    recorder, url = _recording_server(serve)
    (workdir / "configs").mkdir()
    (workdir / "configs" / "endpoints.toml").write_text(
        f'[fast]\nmodel = "real-model"\nurl = "{url}"\nkey = "FAST_KEY"\n')  # the default path: no -e
    done = vf_eval(workdir, "cli-env", "-m", "fast", "-n", "2", "-r", "1", env_vars={"FAST_KEY": "s3cret"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(recorder.models) == {"real-model"} and set(recorder.keys) == {"s3cret"}
    [run] = _runs(workdir)
    assert _meta(run)["model"] == "real-model" and _meta(run)["base_url"] == url
    assert _meta(run)["config"]["api_key_var"] == "FAST_KEY"


@pytest.mark.slow
def test_a_python_registry_is_read_and_explicit_flags_win(workdir: Path, serve) -> None:
    recorder, url = _recording_server(serve)
    registry = workdir / "mine.py"
    registry.write_text('ENDPOINTS = {"fast": {"model": "py-model", "url": "http://127.0.0.1:9/v1", '
                        '"key": "FAST_KEY"}}\n')
    done = vf_eval(workdir, "cli-env", "-e", str(registry), "-m", "fast", "-b", url, "-k", "OTHER_KEY",
                   "-n", "1", "-r", "1", env_vars={"FAST_KEY": "no", "OTHER_KEY": "yes"})
    assert done.returncode == 0, done.stdout + done.stderr
    # the entry renames the model; -b and -k replace its URL and key
    assert recorder.models == ["py-model"] and recorder.keys == ["yes"]
    # a model the registry does not hold is sent as given
    done = vf_eval(workdir, "cli-env", "-e", str(registry), "-m", "plain", "-b", url, "-n", "1", "-r", "1",
                   "-o", str(workdir / "second"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert recorder.models[-1] == "plain"


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("endpoints.toml", "[fast]\nmodel = 'm'\nurl = 'http://127.0.0.1:9/v1'\n",
         "endpoints.toml: endpoint 'fast': 'key' must be a non-empty string"),
        ("endpoints.toml", "[fast]\nmodel = 'm'\nurl = 'http://x/v1'\nkey = 'K'\nkind = 1\n",
         "endpoints.toml: endpoint 'fast': unknown key 'kind' (known: model, url, key)"),
        ("endpoints.toml", "[fast]\nmodel = 'm'\nurl = '127.0.0.1:9/v1'\nkey = 'K'\n",
         "endpoint 'fast': 'url' must start with http:// or https://"),
        ("endpoints.toml", "[fast\n", "cannot read"),
        ("endpoints.py", "raise RuntimeError('boom')\n", "running the endpoints registry failed: RuntimeError: boom"),
        ("endpoints.py", "ENDPOINTS = 3\n", "must define ENDPOINTS as a dict"),
        ("endpoints.yaml", "fast: 1\n", "an endpoints registry is a .toml or a .py file"),
    ],
)
def test_a_bad_registry_is_refused_naming_its_file(workdir: Path, name: str, text: str, message: str) -> None:
    (workdir / name).write_text(text)
    done = vf_eval(workdir, "cli-env", "-e", name, "-m", "fast")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert not (workdir / "outputs").exists()


def test_a_registry_path_that_does_not_exist_is_refused(workdir: Path) -> None:
    done = vf_eval(workdir, "cli-env", "-e", "nowhere.toml")
    assert done.returncode == 2 and "error: -e/--endpoints-path: nowhere.toml does not exist" in done.stdout
    assert not (workdir / "outputs").exists()


# -- -p/--provider ---------------------------------------------------------------------------


def test_a_provider_sets_url_and_key_and_b_wins_over_it(workdir: Path, serve) -> None:
    recorder, url = _recording_server(serve)
    done = vf_eval(workdir, "cli-env", "-p", "together", "-b", url, "-m", "m", "-n", "1", "-r", "1",
                   env_vars={"TOGETHER_API_KEY": "tog"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert recorder.keys == ["tog"]  # the provider's key variable, with -b's URL
    (workdir / "configs").mkdir()
    (workdir / "configs" / "endpoints.toml").write_text(
        '[fast]\nmodel = "real-model"\nurl = "https://example.invalid/v1"\nkey = "FAST_KEY"\n')
    # -p wins over a registry entry's URL and key, but the entry still names the model; nothing listens there
    done = vf_eval(workdir, "cli-env", "-p", "vllm", "-m", "fast", "-n", "1", "-r", "1", "--max-retries", "0",
                   "-o", str(workdir / "second"), unset=("VLLM_API_KEY",))
    run = _runs(workdir, "second")[0]
    assert _meta(run)["model"] == "real-model" and _meta(run)["base_url"] == "http://localhost:8000/v1"
    assert _meta(run)["config"]["api_key_var"] == "VLLM_API_KEY"


def test_an_unknown_provider_lists_the_known_ones(workdir: Path) -> None:
    done = vf_eval(workdir, "cli-env", "-p", "acme")
    assert done.returncode == 2
    assert f"error: -p/--provider unknown provider 'acme' (known: {', '.join(PROVIDERS)})" in done.stdout
    assert not (workdir / "outputs").exists()


def test_the_provider_help_names_every_provider() -> None:
    import typer

    [param] = [p for p in typer.main.get_command(app).params if p.name == "provider"]
    assert all(name in (param.help or "") for name in PROVIDERS)


# -- FILE.toml -------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_config_file_sets_the_run_and_flags_win(workdir: Path, serve) -> None:
    recorder, url = _recording_server(serve)
    (workdir / "eval.toml").write_text(textwrap.dedent(f'''
        env_id = "cli-env"
        model = "from-file"
        api_base_url = "{url}"
        num_examples = 3
        rollouts_per_example = 2
        env_args = {{ num_examples = 5 }}
    '''))
    done = vf_eval(workdir, "eval.toml", "-r", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = _runs(workdir)
    assert len(_lines(run)) == 3  # -n from the file, -r from the flag
    assert _meta(run)["env_args"] == {"num_examples": 5} and set(recorder.models) == {"from-file"}


@pytest.mark.slow
def test_a_config_file_with_several_evals_runs_each(workdir: Path, serve) -> None:
    _, url = _recording_server(serve)
    (workdir / "evals.toml").write_text(textwrap.dedent(f'''
        model = "shared"
        api_base_url = "{url}"
        rollouts_per_example = 1

        [[eval]]
        id = "cli-env"
        num_examples = 2

        [[eval]]
        env_id = "cli-env"
        num_examples = 3
        args = {{ num_examples = 3 }}
    '''))
    done = vf_eval(workdir, "evals.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "eval 1 of 2" in done.stdout and "eval 2 of 2" in done.stdout
    assert sorted(len(_lines(run)) for run in _runs(workdir)) == [2, 3]


@pytest.mark.parametrize(
    "text, message",
    [
        ('env_id = "cli-env"\ncolour = 1\n', "eval.toml: unknown key 'colour' (known: env_id, "),
        ('env_id = "cli-env"\nnum_examples = 0\n', "eval.toml: bad value: num_examples must be -1 (all) or >= 1"),
        ('env_id = "cli-env"\nprovider = "acme"\n', "eval.toml: bad value: provider unknown provider 'acme'"),
        ('env_id = "cli-env"\nstate_columns = ["reward"]\n', "eval.toml: bad value: state_columns 'reward' is "
                                                              "already a results.jsonl column"),
        ('model = "m"\n', "eval.toml: no env_id"),
        ('[[eval]]\nenv_id = "cli-env"\n[[eval]]\nenv_id = "cli-env"\nmax_tokens = -1\n',
         "eval.toml: [[eval]] number 2: bad value: max_tokens must be >= 1"),
        ('[eval]\nenv_id = "cli-env"\n', "eval.toml: 'eval' must be one or more [[eval]] tables"),
        ('env_id = "cli-env\n', "cannot read eval.toml"),
    ],
)
def test_a_bad_config_file_names_the_file_and_key(workdir: Path, text: str, message: str) -> None:
    (workdir / "eval.toml").write_text(text)
    done = vf_eval(workdir, "eval.toml")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert not (workdir / "outputs").exists()


def test_a_missing_config_file_and_resuming_one_are_refused(workdir: Path) -> None:
    done = vf_eval(workdir, "nowhere.toml")
    assert done.returncode == 2 and "error: nowhere.toml: no such config file" in done.stdout
    (workdir / "eval.toml").write_text('env_id = "cli-env"\n')
    done = vf_eval(workdir, "eval.toml", "-R")
    assert done.returncode == 2 and "-R/--resume takes an environment id, not a config file" in done.stdout
    assert not (workdir / "outputs").exists()


# -- -C/--state-columns and --save-dataset ---------------------------------------------------


@pytest.mark.slow
def test_state_columns_are_saved_json_safe_and_the_dataset_loads(workdir: Path, serve) -> None:
    from datasets import load_from_disk

    _, url = _recording_server(serve)
    done = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "-n", "3", "-r", "2", "-C", "note, opaque,absent",
                   "--save-dataset", "ds")
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = _runs(workdir)
    # results.jsonl takes groups as they finish, so order by example before comparing
    lines = sorted(_lines(run), key=lambda line: line["example_id"])
    assert [line["note"] for line in lines] == [{"word": f"word{i}"[::-1]} for i in range(3) for _ in range(2)]
    assert {line["opaque"] for line in lines} == {"<opaque>"} and {line["absent"] for line in lines} == {None}
    # one warning for the column, not one per rollout
    assert done.stderr.count("state column 'opaque' holds a value of type _Opaque, which is not JSON") == 1
    dataset = load_from_disk(str(workdir / "ds"))
    assert len(dataset) == 6 and set(dataset["opaque"]) == {"<opaque>"}
    assert all(row["note"] == {"word": f"word{row['example_id']}"[::-1]} for row in dataset)
    assert sorted(dataset["example_id"]) == sorted(line["example_id"] for line in lines)
    assert "dataset: ds" in done.stdout


@pytest.mark.parametrize(
    "columns, message",
    [
        ("reward", "error: -C/--state-columns 'reward' is already a results.jsonl column"),
        ("a,,b", "error: -C/--state-columns has an empty name"),
    ],
)
def test_bad_state_columns_are_refused(workdir: Path, columns: str, message: str) -> None:
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-C", columns)
    assert done.returncode == 2 and message in done.stdout
    assert not (workdir / "outputs").exists()


def test_save_dataset_never_writes_over_a_folder_with_files(workdir: Path) -> None:
    taken = workdir / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "--save-dataset", str(taken))
    assert done.returncode == 2
    assert f"error: --save-dataset: {taken} already exists and is not an empty folder" in done.stdout
    assert (taken / "keep.txt").read_text() == "mine" and not (workdir / "outputs").exists()

