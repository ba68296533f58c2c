from __future__ import annotations

import functools

import pytest

from verifiers.rubrics.injection import (
    ensure_reward_func,
    func_name,
    is_group_func,
    select_arguments,
)

AVAILABLE = {"prompt": "p", "completion": "c", "answer": "a", "state": {}, "extra": 1}


def test_select_arguments_gives_only_declared_names():
    def f(completion, answer, missing=None):
        return 0.0

    assert select_arguments(f, AVAILABLE) == {"completion": "c", "answer": "a"}


def test_select_arguments_gives_everything_to_var_keyword():
    def f(completion, **kwargs):
        return 0.0

    assert select_arguments(f, AVAILABLE) == AVAILABLE


def test_select_arguments_includes_keyword_only_parameters():
    def f(*, extra):
        return 0.0

    assert select_arguments(f, AVAILABLE) == {"extra": 1}


def test_group_detection_by_plural_parameter():
    def group(completions, answer):
        return []

    def single(completion, answer) -> float:
        return 0.0

    assert is_group_func(group)
    assert not is_group_func(single)


def test_group_detection_by_list_annotation_postponed_and_real():
    def postponed(completion) -> list[float]:  # a string annotation under `from __future__`
        return []

    def untyped(completion):
        return []

    real = eval("lambda completion: []")
    real.__annotations__ = {"return": list[float]}
    bare = eval("lambda completion: []")
    bare.__annotations__ = {"return": list}
    assert is_group_func(postponed)
    assert is_group_func(real)
    assert is_group_func(bare)
    assert not is_group_func(untyped)


def test_func_name_of_function_partial_and_object():
    def named(completion):
        return 0.0

    class Scorer:
        def __call__(self, completion):
            return 0.0

    assert func_name(named) == "named"
    assert func_name(functools.partial(named)) == "named"
    assert func_name(Scorer()) == "Scorer"


def test_ensure_reward_func_rejects_non_callables_and_unreadable_signatures():
    with pytest.raises(TypeError, match="must be callable, got str"):
        ensure_reward_func("exact_match")
    with pytest.raises(TypeError, match="no readable signature"):
        ensure_reward_func(max)
    ensure_reward_func(lambda completion: 1.0)
