"""run_eval's run folder: a run that stops on an unexpected exception says so in metadata.json."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from verifiers.eval.config import EvalConfig
from verifiers.eval.run import run_eval

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
