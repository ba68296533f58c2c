"""The nodes of a run meet at the launch id the head publishes in the run folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from trainer_adapter.rendezvous import LAUNCH_FILE, LAUNCH_ID_ENV, LaunchWaitError, publish_launch, wait_for_launch


def test_a_node_waits_for_this_launch_not_an_earlier_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LAUNCH_ID_ENV, "job-41")
    assert publish_launch(tmp_path) == "job-41"  # a resumed run's earlier launch
    started = time.monotonic()
    with pytest.raises(LaunchWaitError, match=r"no launch 'job-42' in .* after 0 s: .*VF_LAUNCH_ID=job-42"):
        wait_for_launch(tmp_path, "job-42", timeout_s=0.2, poll_s=0.05)
    assert time.monotonic() - started < 5
    monkeypatch.setenv(LAUNCH_ID_ENV, "job-42")
    publish_launch(tmp_path)
    wait_for_launch(tmp_path, "job-42", timeout_s=1)  # returns at once
    assert (tmp_path / LAUNCH_FILE).read_text() == "job-42" and not list(tmp_path.glob(".*partial"))


def test_without_a_scheduler_id_each_launch_gets_a_new_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LAUNCH_ID_ENV, raising=False)
    first, second = publish_launch(tmp_path), publish_launch(tmp_path)
    assert first != second and len(first) == 32 and (tmp_path / LAUNCH_FILE).read_text() == second
