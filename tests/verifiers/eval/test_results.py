"""results.jsonl: whole groups appended; resume keeps complete groups only."""

from __future__ import annotations

import json
from pathlib import Path

from verifiers.eval.results import ResultsWriter, load_complete_groups


def _out(example: int, rollout: int) -> dict:
    return {"example_id": example, "rollout_index": rollout, "task": "default", "reward": 1.0}


def test_torn_tail_and_partial_groups_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.append_group([_out(0, 0), _out(0, 1)])
        writer.append_group([_out(1, 0), _out(1, 1)])
    with path.open("a") as f:  # a kill -9 in the middle of the third group's write
        f.write(json.dumps(_out(2, 0)) + "\n" + '{"example_id": 2, "rollout_ind')
    kept = load_complete_groups(path, rollouts_per_example=2)
    assert [(o["example_id"], o["rollout_index"]) for o in kept] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len(path.read_text().splitlines()) == 4  # the file now holds exactly what is kept


def test_missing_file_means_nothing_done(tmp_path: Path) -> None:
    assert load_complete_groups(tmp_path / "none.jsonl", 3) == []


def test_a_group_with_an_errored_rollout_runs_again(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.append_group([_out(0, 0), {**_out(0, 1), "error": "ModelError: Connection error."}])
        writer.append_group([_out(1, 0), _out(1, 1)])
    kept = load_complete_groups(path, rollouts_per_example=2)
    assert [(o["example_id"], o["rollout_index"]) for o in kept] == [(1, 0), (1, 1)]
    assert len(path.read_text().splitlines()) == 2
