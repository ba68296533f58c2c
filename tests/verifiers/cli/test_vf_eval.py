"""vf-eval as a user runs it: a subprocess against a real scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from verifiers.testing import Reply, ScriptedRequest

ENV_SOURCE = textwrap.dedent('''
    import verifiers as vf
    from datasets import Dataset

    def load_environment(num_examples: int = 8):
        ds = Dataset.from_list([{"question": f"word{i}", "answer": f"word{i}"[::-1]} for i in range(num_examples)])

        def reversed_ok(completion, answer) -> float:
            return float(completion[-1]["content"] == answer)

        def broken(completion) -> float:
            raise ZeroDivisionError("bug in a reward function")

        rubric = vf.Rubric(funcs=[reversed_ok, broken], weights=[1.0, 0.0])
        return vf.SingleTurnEnv(dataset=ds, eval_dataset=ds, rubric=rubric)
''')


def env_workdir(tmp_path: Path, source: str) -> Path:
    """``tmp_path`` with the environment ``cli-env`` (``source``) under ``environments/``."""
    folder = tmp_path / "environments" / "cli_env"
    folder.mkdir(parents=True)
    (folder / "cli_env.py").write_text(source)
    return tmp_path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return env_workdir(tmp_path, ENV_SOURCE)


def vf_eval(workdir: Path, *args: str, wait: bool = True, unset: tuple[str, ...] = (),
            env_vars: dict[str, str] | None = None, **kwargs):
    cmd = [sys.executable, "-m", "verifiers.cli.vf_eval", *args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]), "COLUMNS": "200", **(env_vars or {})}
    env = {k: v for k, v in env.items() if k not in unset}
    if not wait:
        return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=120, **kwargs)


def _run_dir(workdir: Path) -> Path:
    runs = list((workdir / "outputs" / "evals").glob("*/*"))
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.slow
def test_eval_writes_results_metadata_and_summary(workdir: Path, serve) -> None:
    url = serve("reverse")
    done = vf_eval(workdir, "cli-env", "-m", "scripted", "-b", url, "-n", "4", "-r", "2", "-a", '{"num_examples": 6}')
    assert done.returncode == 0, done.stdout + done.stderr
    run = _run_dir(workdir)
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and all(line["reward"] == 1.0 for line in lines)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["avg_reward"] == 1.0
    assert meta["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert meta["env_args"] == {"num_examples": 6} and meta["version_info"]["verifiers"].startswith("0.3.0")
    # the broken reward function scored 0, and it is counted and shown, not silent
    assert meta["error_counts"] == {"reward function: broken": 8}
    assert "reward function: broken × 8" in done.stdout
    assert "ZeroDivisionError" in done.stdout + done.stderr  # its traceback, reported once
    assert "reward" in done.stdout and "pass@2" in done.stdout


@pytest.mark.slow
def test_num_examples_minus_one_evaluates_every_example(workdir: Path, serve) -> None:
    url = serve("reverse")
    done = vf_eval(workdir, "cli-env", "-m", "scripted", "-b", url, "-n", "-1", "-r", "1", "-a", '{"num_examples": 6}')
    assert done.returncode == 0, done.stdout + done.stderr
    run = _run_dir(workdir)
    assert len((run / "results.jsonl").read_text().splitlines()) == 6
    assert json.loads((run / "metadata.json").read_text())["num_examples"] == 6
    assert "rollouts failed" not in done.stderr  # nothing failed, so nothing is reported


class FaultyModel:
    """Reverses each word, except: ``word7`` gets a 200 whose body is not JSON, ``word3`` always a 503."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def __call__(self, request: ScriptedRequest) -> Reply:
        word = request.last_user_text
        self.asked[word] += 1
        if word == "word7":
            return Reply(raw_body=b"<html><body>502 Bad Gateway</body></html>")
        if word == "word3":
            return Reply(status=503)
        return Reply(word[::-1])


@pytest.mark.slow
def test_a_malformed_reply_is_that_rollouts_error_and_the_run_finishes(workdir: Path, serve) -> None:
    model = FaultyModel()
    url = serve(model)
    done = vf_eval(workdir, "cli-env", "-m", "faulty", "-b", url, "-n", "20", "-r", "3", "--max-retries", "0",
                   "-a", '{"num_examples": 20}')
    assert done.returncode == 0, done.stdout + done.stderr
    run = _run_dir(workdir)
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 60
    errors = {line["example_id"]: line["error"] for line in lines if line["error"]}
    assert sorted(errors) == [3, 7]
    assert errors[7].startswith("MalformedModelResponseError: the model API's reply is not valid JSON")
    assert errors[3].startswith("ModelError: model API failed after 1 attempts")
    # errored rollouts are not scored, so their error is counted once (not again as the reward functions')
    assert all(line["scoring_errors"] == {} and line["reward"] == 0.0 for line in lines if line["error"])
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["num_scored"] == 54 and meta["avg_reward"] == 1.0
    assert meta["error_counts"] == {"reward function: broken": 54, "rollout: MalformedModelResponseError": 3,
                                    "rollout: ModelError": 3}
    assert model.asked["word3"] == 3 and model.asked["word7"] == 3  # --max-retries 0: one attempt per rollout
    # not only inside results.jsonl: the count and the first error (example 3's) are on stderr
    assert "warning: 6 of 60 rollouts failed; first error: ModelError: model API failed after 1 attempts" \
        in done.stderr
    model.asked.clear()
    again = vf_eval(workdir, "cli-env", "-m", "faulty", "-b", url, "-n", "8", "-r", "1", "--max-retries", "2",
                    "-o", str(workdir / "retries"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert model.asked["word3"] == 3 and model.asked["word7"] == 1  # 2 retries of the 503; garbage is not retried


@pytest.mark.parametrize(
    "args, message",
    [
        (["-a", "{bad json"], "--env-args must be a JSON object"),
        (["-a", "[1, 2]"], "--env-args must be a JSON object"),
        (["-S", "3"], "--sampling-args must be a JSON object"),
        (["-a", '{"colour": 1}'], "does not take argument(s) colour"),
        (["--header", "no-colon"], "bad --header"),
        (["-n", "abc"], "Invalid value"),
        # numbers are refused at the flag, with the flag's name and the valid range
        (["-n", "-5"], "error: -n/--num-examples must be -1 (all) or >= 1, got -5"),
        (["-n", "0"], "error: -n/--num-examples must be -1 (all) or >= 1, got 0"),
        (["-r", "0"], "error: -r/--rollouts-per-example must be >= 1, got 0"),
        (["-c", "0"], "error: -c/--max-concurrent must be -1 (no cap) or >= 1, got 0"),
        (["--max-concurrent-scoring", "0"], "error: --max-concurrent-scoring must be >= 1, got 0"),
        (["--max-tokens", "-3"], "error: -t/--max-tokens must be >= 1, got -3"),
        (["-T", "-0.5"], "error: -T/--temperature must be >= 0, got -0.5"),
        (["--timeout", "0"], "error: --timeout must be > 0, got 0.0"),
        (["--max-retries", "-1"], "error: --max-retries must be >= 0, got -1"),
        (["--pass-threshold", "1.5"], "error: --pass-threshold must be in [0, 1], got 1.5"),
        (["-b", "127.0.0.1:8000/v1"], "error: -b/--api-base-url must start with http:// or https:// "
                                      "(did you mean http://127.0.0.1:8000/v1?)"),
        (["-b", "ftp://127.0.0.1/v1"], "error: -b/--api-base-url must be an http:// or https:// URL"),
    ],
)
def test_bad_flags_get_a_clear_message(workdir: Path, args: list[str], message: str) -> None:
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", *args)
    assert done.returncode == 2
    assert message in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "errors.pydantic.dev" not in done.stdout + done.stderr
    assert not (workdir / "outputs").exists()  # refused before anything started


def test_every_problem_gets_its_own_line(workdir: Path) -> None:
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-n", "0", "-r", "0")
    assert done.returncode == 2
    assert [line for line in done.stdout.splitlines() if line.startswith("error:")] == [
        "error: -n/--num-examples must be -1 (all) or >= 1, got 0",
        "error: -r/--rollouts-per-example must be >= 1, got 0",
    ]


def test_a_dead_server_exits_1_with_the_first_error(workdir: Path) -> None:
    done = vf_eval(workdir, "cli-env", "-m", "x", "-b", "http://127.0.0.1:9/v1", "-n", "2", "-r", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: all 2 rollouts failed; first error: ModelError: model API failed after 4 attempts" in done.stderr
    assert "Connection error" in done.stderr
    run = _run_dir(workdir)  # the results are saved all the same
    assert len((run / "results.jsonl").read_text().splitlines()) == 2
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "failed" and meta["num_scored"] == 0
    assert meta["error"].startswith("all 2 rollouts failed; first error: ModelError:")


def test_unknown_environment_and_missing_key(workdir: Path) -> None:
    done = vf_eval(workdir, "does-not-exist", "-b", "http://127.0.0.1:9/v1")
    assert done.returncode == 2 and "Could not import 'does-not-exist'" in done.stdout
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-a", '{"colour": 1}')
    assert done.returncode == 2 and "does not take argument(s) colour" in done.stdout
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-m", "verifiers.cli.vf_eval", "cli-env", "-b", "https://api.example.com/v1"],
                          cwd=workdir, env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "OPENAI_API_KEY" in done.stdout
    assert not (workdir / "outputs").exists()  # none of these runs started, so none left a folder


@pytest.mark.slow
def test_resume_after_kill_9_loses_and_duplicates_nothing(workdir: Path, serve) -> None:
    url = serve("reverse", delay_s=0.15)
    proc = vf_eval(workdir, "cli-env", "-m", "slow", "-b", url, "-n", "40", "-r", "2", "-c", "4",
                   "-a", '{"num_examples": 40}', wait=False)
    deadline = time.time() + 60
    results = None
    while time.time() < deadline:
        found = list((workdir / "outputs" / "evals").glob("*/*/results.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 10:
            results = found[0]
            break
        time.sleep(0.05)
    assert results is not None, "the run never wrote results"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(results.read_text().splitlines())
    assert before < 80
    done = vf_eval(workdir, "cli-env", "-b", url, "-c", "16", "-R", str(results.parent))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [(line["example_id"], line["rollout_index"]) for line in lines]
    assert len(keys) == 80 and len(set(keys)) == 80
    meta = json.loads((results.parent / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["num_examples"] == 40
    # and -R with no folder picks the newest run of this env and model
    again = vf_eval(workdir, "cli-env", "-m", "slow", "-b", url, "-R")
    assert again.returncode == 0, again.stdout
    assert len(results.read_text().splitlines()) == 80


def _pyproject(workdir: Path, body: str) -> None:
    (workdir / "environments" / "cli_env" / "pyproject.toml").write_text(
        f'[project]\nname = "cli-env"\nversion = "0.1.0"\n\n[tool.verifiers.eval]\n{body}\n')


@pytest.mark.slow
def test_the_environments_eval_table_sets_defaults_and_flags_win(workdir: Path, serve) -> None:
    url = serve("reverse")
    _pyproject(workdir, "num_examples = 3\nrollouts_per_example = 1")
    done = vf_eval(workdir, "cli-env", "-m", "scripted", "-b", url)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _run_dir(workdir)
    assert len((run / "results.jsonl").read_text().splitlines()) == 3
    done = vf_eval(workdir, "cli-env", "-m", "scripted", "-b", url, "-r", "2", "-o", str(workdir / "second"))
    assert done.returncode == 0, done.stdout + done.stderr
    second = next((workdir / "second" / "evals").glob("*/*"))
    assert len((second / "results.jsonl").read_text().splitlines()) == 6  # -n from the table, -r from the flag


def test_a_bad_eval_table_value_names_its_file(workdir: Path) -> None:
    _pyproject(workdir, "rollouts_per_example = 0")
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "pyproject.toml: bad [tool.verifiers.eval] value (rollouts_per_example" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_resume_reuses_the_runs_model_server_and_sampling_and_retries_errored_groups(workdir: Path) -> None:
    from verifiers.testing import ScriptedServer

    server = ScriptedServer("reverse", fail_first=2, fail_status=503)
    with server.running() as url:
        first = vf_eval(workdir, "cli-env", "-m", "my-model", "-b", url, "-n", "4", "-r", "2", "-c", "1",
                        "-T", "0.7", "--max-retries", "0")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "warning:" in first.stderr and "2 of 8 rollouts failed" in first.stderr, first.stderr
        again = vf_eval(workdir, "cli-env", "-R", unset=("OPENAI_API_KEY",))  # no -m, -b or key: all from the run
    assert again.returncode == 0, again.stdout + again.stderr
    assert "warning" not in again.stderr
    results = _run_dir(workdir) / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted((o["example_id"], o["rollout_index"]) for o in lines) == [(e, r) for e in range(4) for r in range(2)]
    assert not any(o["error"] for o in lines)
    resumed = server.recent_requests[-1]
    assert resumed.model == "my-model" and resumed.sampling["temperature"] == 0.7


@pytest.mark.slow
def test_the_summary_shows_sample_rollouts_as_text_never_as_markup(workdir: Path, serve) -> None:
    url = serve(lambda request: "[bold red]not markup[/bold red]")
    done = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "-n", "4", "-r", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sample rollouts (3 of 8)" in done.stdout
    assert "#1  reward 0.00" in done.stdout and "user: word0" in done.stdout and "user: word2" in done.stdout
    assert "user: word3" not in done.stdout  # the first rollout of the first three examples
    assert "assistant: [bold red]not markup[/bold red]" in done.stdout
    assert done.stdout.index("sample rollouts") < done.stdout.index("mean ± std")  # the table stays last
    quiet = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "-n", "2", "-r", "1", "--show-samples", "0")
    assert quiet.returncode == 0 and "sample rollouts" not in quiet.stdout
    bad = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "--show-samples", "-1")
    assert bad.returncode == 2 and "--show-samples" in bad.stdout + bad.stderr


HANGING_ENV = textwrap.dedent('''
    import asyncio
    import time

    import verifiers as vf
    from datasets import Dataset

    def load_environment():
        ds = Dataset.from_list([{"question": f"word{i}", "answer": f"word{i}"[::-1]} for i in range(8)])

        def reversed_ok(completion, answer) -> float:
            if answer == "1drow":
                while True:  # a synchronous reward function that never returns
                    time.sleep(1)
            return float(completion[-1]["content"] == answer)

        async def judged(completion, answer) -> float:
            if answer == "2drow":
                await asyncio.sleep(3600)  # an async one that never returns
            return 0.5

        return vf.SingleTurnEnv(dataset=ds, eval_dataset=ds, rubric=vf.Rubric(funcs=[reversed_ok, judged]))
''')


@pytest.mark.slow
def test_hanging_reward_functions_cost_their_rollouts_and_the_run_finishes(tmp_path: Path, serve) -> None:
    workdir = env_workdir(tmp_path, HANGING_ENV)
    url = serve(lambda request: Reply(request.last_user_text[::-1]))
    start = time.monotonic()
    done = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "-n", "8", "-r", "1", "--scoring-timeout", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - start < 60
    lines = {line["example_id"]: line for line in map(json.loads, (_run_dir(workdir) / "results.jsonl").open())}
    assert sorted(lines) == list(range(8))  # every row saved: the hangs blocked neither the loop nor the run
    assert lines[1]["reward"] == 0.5 and "did not finish within 2 s" in lines[1]["scoring_errors"]["reversed_ok"]
    assert lines[2]["reward"] == 1.0 and "did not finish within 2 s" in lines[2]["scoring_errors"]["judged"]
    assert all(lines[i]["reward"] == 1.5 and lines[i]["scoring_errors"] == {} for i in (0, 3, 4, 5, 6, 7))
    meta = json.loads((_run_dir(workdir) / "metadata.json").read_text())
    assert meta["error_counts"] == {"reward function: judged": 1, "reward function: reversed_ok": 1}


@pytest.mark.parametrize("value", ["0", "-3", "soon"])
def test_a_bad_scoring_timeout_is_a_usage_error(workdir: Path, value: str) -> None:
    done = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "--scoring-timeout", value)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "scoring" in (done.stdout + done.stderr).lower()


@pytest.mark.slow
def test_a_reply_over_max_reply_bytes_is_its_rollouts_error_and_is_not_saved(workdir: Path, serve) -> None:
    asked: Counter[str] = Counter()

    def huge(request: ScriptedRequest) -> Reply:
        asked[request.last_user_text] += 1
        return Reply("x" * 3_000_000 if request.last_user_text == "word1" else request.last_user_text[::-1])

    url = serve(huge)
    done = vf_eval(workdir, "cli-env", "-m", "m", "-b", url, "-n", "3", "-r", "1", "--max-reply-bytes", "1000000")
    assert done.returncode == 0, done.stdout + done.stderr
    results = _run_dir(workdir) / "results.jsonl"
    lines = {line["example_id"]: line for line in map(json.loads, results.open())}
    assert lines[1]["error"].startswith("ReplyTooLargeError: the model API's reply is")
    assert lines[0]["reward"] == 1.0 and lines[2]["reward"] == 1.0
    assert asked["word1"] == 1  # not retried
    assert results.stat().st_size < 100_000
