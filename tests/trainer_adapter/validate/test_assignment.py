"""Seeded data assignment: the same for the same (step, worker), different otherwise, replayable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer_adapter.validate.assignment import assigned_problems, assignment_seed


def test_the_same_step_and_worker_get_the_same_problems() -> None:
    assert assigned_problems(3, "w1", 100, 5) == assigned_problems(3, "w1", 100, 5)
    problems = assigned_problems(3, "w1", 100, 5)
    assert len(set(problems)) == 5 and all(0 <= p < 100 for p in problems)


def test_other_steps_and_workers_get_other_problems() -> None:
    draws = {tuple(assigned_problems(s, w, 1000, 8)) for s in range(5) for w in ("a", "b", "c")}
    assert len(draws) == 15


def test_the_seed_does_not_depend_on_the_process() -> None:
    """Python's hash() of a str is salted per process; the assignment must not be."""
    code = "from trainer_adapter.validate.assignment import assignment_seed; print(assignment_seed(7, 'w'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == assignment_seed(7, "w")


def test_the_step_and_the_name_cannot_be_shifted_into_each_other() -> None:
    assert assignment_seed(12, "3w") != assignment_seed(123, "w")


@pytest.mark.parametrize(("size", "problems"), [(10, 0), (10, 11), (0, 1)])
def test_impossible_assignments_are_refused(size: int, problems: int) -> None:
    with pytest.raises(ValueError, match="cannot assign"):
        assigned_problems(0, "w", size, problems)
