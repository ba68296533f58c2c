"""Dataset builders (0.3.0's ``DatasetBuilder``): callables that environments build on first use."""

from __future__ import annotations

import copy
import gc
import pickle
import threading
import time

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.envs.dataset import format_dataset, rows_from_inputs
from verifiers.envs.dataset_builder import LazyDataset, is_dataset_builder

ROWS = [{"question": f"q{i}", "answer": str(i)} for i in range(3)]


class CountingBuilder:
    """A builder that records how often it ran."""

    def __init__(self, rows: list[dict] = ROWS) -> None:
        self.rows = rows
        self.calls = 0

    def __call__(self) -> Dataset:
        self.calls += 1
        return Dataset.from_list(self.rows)


def exact(completion, answer) -> float:
    return 1.0


def test_a_builder_runs_on_first_use_and_only_once():
    builder = CountingBuilder()
    env = vf.SingleTurnEnv(dataset=builder, system_prompt="S", rubric=vf.Rubric(funcs=[exact]))
    assert builder.calls == 0 and isinstance(env.dataset, LazyDataset) and not env.dataset.is_built
    assert "not built yet" in repr(env.dataset)  # repr must not build
    assert len(env.get_dataset()) == 3
    assert env.dataset.is_built and builder.calls == 1
    first = env.get_dataset(n=2)[0]
    assert first["prompt"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "q0"}]
    assert first["example_id"] == 0
    assert builder.calls == 1


def test_the_training_builder_is_not_run_for_an_evaluation():
    train, evaluation = CountingBuilder(), CountingBuilder([{"question": "e", "answer": "1"}])
    env = vf.SingleTurnEnv(dataset=train, eval_dataset=evaluation, rubric=vf.Rubric(funcs=[exact]))
    assert [row["question"] for row in env.get_eval_dataset()] == ["e"]
    assert (train.calls, evaluation.calls) == (0, 1)


def test_a_lambda_builder_gives_a_real_dataset():
    lazy = format_dataset(lambda: Dataset.from_list(ROWS))
    assert isinstance(lazy, Dataset)
    assert lazy.column_names == ["question", "answer", "example_id", "id", "prompt"]
    assert [r["answer"] for r in rows_from_inputs(lazy)] == ["0", "1", "2"]
    assert type(lazy.shuffle(seed=0)) is Dataset and len(lazy.select(range(2))) == 2


def test_copies_and_pickles_work_before_and_after_the_build():
    builder = CountingBuilder()
    lazy = format_dataset(builder)
    assert not copy.deepcopy(lazy).is_built and builder.calls == 0
    lazy.build()
    assert len(pickle.loads(pickle.dumps(lazy))) == 3 and len(copy.deepcopy(lazy)) == 3
    del lazy
    gc.collect()  # collecting an unbuilt or built one never calls the builder again
    assert builder.calls == 1


@pytest.mark.parametrize("value, expected", [(lambda: None, True), (Dataset.from_list(ROWS), False), ("x", False)])
def test_is_dataset_builder(value, expected):
    assert is_dataset_builder(value) is expected


def test_a_builder_that_needs_arguments_is_refused_at_once():
    with pytest.raises(TypeError, match="called without arguments.*takes \\(split\\)"):
        vf.SingleTurnEnv(dataset=lambda split: Dataset.from_list(ROWS), rubric=vf.Rubric(funcs=[exact]))


def test_a_builder_returning_something_else_fails_clearly_on_use():
    lazy = format_dataset(lambda: ROWS)
    with pytest.raises(TypeError, match="returned list, not a datasets.Dataset"):
        len(lazy)


def test_a_builders_attribute_error_is_not_mistaken_for_a_missing_attribute():
    def broken() -> Dataset:
        raise AttributeError("no such split")

    with pytest.raises(RuntimeError, match="broken failed: AttributeError\\('no such split'\\)"):
        _ = format_dataset(broken).column_names


def test_a_builder_that_reads_its_own_dataset_fails_clearly():
    holder: dict = {}

    def recursive() -> Dataset:
        len(holder["lazy"])
        return Dataset.from_list(ROWS)

    holder["lazy"] = format_dataset(recursive)
    with pytest.raises(RuntimeError, match="read the dataset it is building"):
        holder["lazy"].build()


def test_a_dataset_missing_the_question_column_fails_on_first_use():
    lazy = format_dataset(lambda: Dataset.from_list([{"text": "t"}]))
    with pytest.raises(ValueError, match="'prompt' column or a 'question' column"):
        lazy.build()


def test_other_values_are_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="datasets.Dataset or a callable that returns one, got list"):
        format_dataset(ROWS)
    with pytest.raises(TypeError, match="must be callable"):
        LazyDataset(42, lambda d: d)  # type: ignore[arg-type]


def test_a_completion_environment_builds_its_builder_on_first_use_without_formatting():
    builder = CountingBuilder([{"prompt": "say this", "answer": "say this"}])
    evaluation = CountingBuilder([{"prompt": "e", "answer": "e"}])
    env = vf.SingleTurnEnv(dataset=builder, eval_dataset=evaluation, message_type="completion",
                           rubric=vf.Rubric(funcs=[exact]))
    assert isinstance(env.dataset, LazyDataset) and (builder.calls, evaluation.calls) == (0, 0)
    assert list(env.get_dataset()) == [{"prompt": "say this", "answer": "say this"}]  # as given: no ids, no chat
    assert env.get_eval_dataset()[0]["prompt"] == "e"
    assert (builder.calls, evaluation.calls) == (1, 1)


def test_a_completion_environment_refuses_a_builder_that_needs_arguments():
    with pytest.raises(TypeError, match="called without arguments"):
        vf.SingleTurnEnv(dataset=lambda split: Dataset.from_list(ROWS), message_type="completion",
                         rubric=vf.Rubric(funcs=[exact]))


def test_threads_reading_during_the_build_wait_for_it():
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> Dataset:
        calls.append(1)
        started.set()
        assert release.wait(10)
        return Dataset.from_list(ROWS)

    lazy = format_dataset(slow)
    results: dict[str, object] = {}

    def read(key: str) -> None:
        try:
            results[key] = len(lazy)
        except Exception as exc:  # recorded for the assertion below
            results[key] = exc

    first = threading.Thread(target=read, args=("first",))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=read, args=(f"other{i}",)) for i in range(3)]
    for thread in others:
        thread.start()
    time.sleep(0.2)  # the others are now reading while the builder still runs
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert results == {"first": 3, "other0": 3, "other1": 3, "other2": 3}
    assert len(calls) == 1 and lazy.is_built


def test_a_formatting_attribute_error_is_not_mistaken_for_a_missing_attribute():
    def prepare(built: Dataset) -> Dataset:
        raise AttributeError("no such column helper")

    def rows() -> Dataset:
        return Dataset.from_list(ROWS)

    lazy = LazyDataset(rows, prepare)
    with pytest.raises(RuntimeError, match="formatting the dataset from .*rows failed: AttributeError"):
        _ = lazy.column_names
    assert not lazy.is_built


def test_a_failed_build_can_be_retried():
    outcomes = [AttributeError("flaky"), None]

    def flaky() -> Dataset:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return Dataset.from_list(ROWS)

    lazy = format_dataset(flaky)
    with pytest.raises(RuntimeError, match="flaky failed"):
        lazy.build()
    assert len(lazy) == 3
