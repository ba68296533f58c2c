"""run_eval's run folder: a run that stops on an unexpected exception, or whose every rollout errored, says so
in metadata.json; a run that cannot start leaves no folder."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from verifiers.errors import UsageError
from verifiers.eval.config import EvalConfig
from verifiers.eval.outputs import OUTPUT_KEYS
from verifiers.eval.run import run_eval
from verifiers.types import GenerateMetadata, RolloutOutput

BUGGY_ENV = textwrap.dedent('''
    import verifiers as vf
    from datasets import Dataset

    class Buggy(vf.SingleTurnEnv):
        async def setup_state(self, state):
            raise RuntimeError("a bug in the environment, not a rollout error")

    def load_environment():
        ds = Dataset.from_list([{"question": "q", "answer": "a"}])
        return Buggy(dataset=ds, eval_dataset=ds)
''')


async def test_a_run_stopped_by_a_bug_is_marked_failed_not_running(tmp_path: Path, serve,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "environments" / "buggy_run_env"
    folder.mkdir(parents=True)
    (folder / "buggy_run_env.py").write_text(BUGGY_ENV)
    monkeypatch.chdir(tmp_path)
    config = EvalConfig(env_id="buggy-run-env", api_base_url=serve("echo"), num_examples=1, rollouts_per_example=1,
                        output_dir=tmp_path / "out")
    with pytest.raises(RuntimeError, match="a bug in the environment"):
        await run_eval(config)
    [metadata] = (tmp_path / "out").glob("evals/*/*/metadata.json")
    saved = json.loads(metadata.read_text())
    assert saved["status"] == "failed"
    assert saved["error"] == "RuntimeError: a bug in the environment, not a rollout error"


PLAIN_ENV = textwrap.dedent('''
    import verifiers as vf
    from datasets import Dataset

    def load_environment():
        ds = Dataset.from_list([{"question": f"q{i}", "answer": "a"} for i in range(3)])
        return vf.SingleTurnEnv(dataset=ds, eval_dataset=ds)
''')


def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "environments" / "plain_run_env"
    folder.mkdir(parents=True)
    (folder / "plain_run_env.py").write_text(PLAIN_ENV)
    monkeypatch.chdir(tmp_path)


async def test_a_run_whose_every_rollout_errored_is_marked_failed(tmp_path: Path, serve,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _env(tmp_path, monkeypatch)
    config = EvalConfig(env_id="plain-run-env", api_base_url=serve("echo", fail_first=100, fail_status=503),
                        num_examples=3, rollouts_per_example=1, max_retries=0, output_dir=tmp_path / "out")
    outputs, metadata, run_dir = await run_eval(config)
    assert len(outputs) == 3 and all(o["error"] for o in outputs)
    assert metadata["status"] == "failed"
    assert metadata["error"].startswith("all 3 rollouts failed; first error: ModelError:")
    assert json.loads((run_dir / "metadata.json").read_text())["status"] == "failed"


async def test_a_run_with_some_errored_rollouts_is_complete(tmp_path: Path, serve,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _env(tmp_path, monkeypatch)
    config = EvalConfig(env_id="plain-run-env", api_base_url=serve("echo", fail_first=1, fail_status=503),
                        num_examples=3, rollouts_per_example=1, max_retries=0, max_concurrent=1,
                        output_dir=tmp_path / "out")
    outputs, metadata, _ = await run_eval(config)
    assert sum(bool(o["error"]) for o in outputs) == 1
    assert metadata["status"] == "complete" and "error" not in metadata


async def test_a_run_that_cannot_start_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _env(tmp_path, monkeypatch)
    monkeypatch.delenv("SOME_UNSET_KEY", raising=False)
    config = EvalConfig(env_id="plain-run-env", api_base_url="https://api.example.com/v1",
                        api_key_var="SOME_UNSET_KEY", output_dir=tmp_path / "out")
    with pytest.raises(UsageError, match="no API key"):
        await run_eval(config)
    bad_header = config.model_copy(update={"api_base_url": "http://127.0.0.1:9/v1", "headers": ["no-colon"]})
    with pytest.raises(UsageError, match="bad --header"):
        await run_eval(bad_header)
    assert not (tmp_path / "out").exists()


async def test_the_public_models_declare_every_key_a_run_writes(tmp_path: Path, serve,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``verifiers.types.RolloutOutput`` and ``GenerateMetadata`` describe the files as written: a key added to
    one and not the other fails here instead of drifting."""
    assert set(RolloutOutput.model_fields) == OUTPUT_KEYS
    _env(tmp_path, monkeypatch)
    config = EvalConfig(env_id="plain-run-env", api_base_url=serve("echo", fail_first=1, fail_status=503),
                        num_examples=3, rollouts_per_example=2, max_retries=0, max_concurrent=1,
                        output_dir=tmp_path / "out")
    outputs, metadata, run_dir = await run_eval(config)
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    records = [RolloutOutput.model_validate_json(line) for line in lines]
    assert len(records) == 6 and all(not r.model_extra for r in records)
    assert sum(r.error is not None for r in records) == 1  # the failed request's rollout, recorded as such
    saved = GenerateMetadata.model_validate_json((run_dir / "metadata.json").read_text())
    assert not saved.model_extra and saved.status == "complete" and saved.num_scored == 5
    assert saved.num_examples == 3 and saved.rollouts_per_example == 2 and saved.config["env_id"] == "plain-run-env"
