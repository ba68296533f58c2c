import gzip
import json
import time

import pytest
from datasets import Dataset

from verifiers.data import example_dataset_names, load_example_dataset
from verifiers.errors import UsageError

NOT_BUNDLED = ["aime2024", "aime2025", "amc2023", "gpqa_diamond", "gpqa_main", "mmlu", "mmlu_pro", "openbookqa"]


@pytest.fixture(autouse=True)
def no_data_dir(monkeypatch):
    monkeypatch.delenv("VF_DATA_DIR", raising=False)


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- bundled data ---------------------------------------------------------


def test_gsm8k_test_is_the_default_and_loads_fast():
    start = time.perf_counter()
    ds = load_example_dataset()
    assert time.perf_counter() - start < 1.0
    assert isinstance(ds, Dataset)
    assert ds.column_names == ["question", "answer"]
    assert len(ds) == 1319
    assert ds[0]["question"].startswith("Janet")
    assert ds[0]["answer"] == "18"
    assert not any("####" in a for a in ds["answer"])


def test_gsm8k_train():
    ds = load_example_dataset("gsm8k", "train")
    assert len(ds) == 7473
    assert ds[0]["answer"] == "72"


@pytest.mark.parametrize("name", ["math", "math500", "MATH500"])
def test_math_names_load_math500(name):
    ds = load_example_dataset(name)
    assert len(ds) == 500
    assert ds[0]["answer"] == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert ds[0]["question"].startswith("Convert the point $(0,3)$")


@pytest.mark.parametrize(
    "name, counts",
    [
        ("mmlu_physics", {"test": 643, "val": 70, "dev": 20}),
        ("mmlu_chemistry", {"test": 304, "val": 33, "dev": 10}),
        ("mmlu_biology", {"test": 689, "val": 75, "dev": 20}),
    ],
)
def test_science_splits(name, counts):
    for split, count in counts.items():
        assert len(load_example_dataset(name, split)) == count
    assert load_example_dataset(name, "validation")["question"] == load_example_dataset(name, "val")["question"]
    ds = load_example_dataset(name)
    assert len(ds) == counts["test"]
    assert set(ds["answer"]) <= {"A", "B", "C", "D"}


def test_science_question_has_lettered_choices():
    row = load_example_dataset("mmlu_physics")[0]
    assert row["question"].startswith("Question: The quantum efficiency of a photon detector is 0.1.")
    assert "\n\nA: an average of 10 times, with an rms deviation of about 4\nB: " in row["question"]
    assert row["answer"] == "B"
    assert row["info"] == {"id": "mmlu/college_physics/test/0", "subject": "college_physics"}


def test_humaneval():
    ds = load_example_dataset("humaneval")
    assert len(ds) == 164
    row = ds[0]
    assert row["question"].startswith("from typing import List")
    assert row["info"]["task_id"] == "HumanEval/0"
    assert row["info"]["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in row["info"]["test"]


def test_bundled_names():
    assert example_dataset_names(bundled_only=True) == [
        "gsm8k",
        "humaneval",
        "math",
        "math500",
        "mmlu_biology",
        "mmlu_chemistry",
        "mmlu_physics",
    ]
    assert set(NOT_BUNDLED) <= set(example_dataset_names())


# --- subsets --------------------------------------------------------------


def test_subset_matches_datasets_shuffle_then_select():
    full = load_example_dataset("gsm8k")
    expected = full.shuffle(seed=3).select(range(7))["question"]
    assert load_example_dataset("gsm8k", n=7, seed=3)["question"] == expected


def test_subset_is_reproducible_and_seeded():
    a = load_example_dataset("math500", n=5, seed=1)["question"]
    assert load_example_dataset("math500", n=5, seed=1)["question"] == a
    assert load_example_dataset("math500", n=5, seed=2)["question"] != a


@pytest.mark.parametrize("n, expected", [(10_000, 1319), (0, 1319), (-1, 1319), (None, 1319), (1, 1)])
def test_subset_sizes(n, expected):
    assert len(load_example_dataset("gsm8k", n=n)) == expected


# --- bad input ------------------------------------------------------------


def test_unknown_name_suggests_close_ones():
    with pytest.raises(UsageError, match="Did you mean 'gsm8k'") as info:
        load_example_dataset("gsm8")
    assert "math500" in str(info.value)  # the known names are listed


def test_unknown_name_without_close_match():
    with pytest.raises(UsageError, match="unknown example dataset 'zzzzzz'") as info:
        load_example_dataset("zzzzzz")
    assert "Did you mean" not in str(info.value)


@pytest.mark.parametrize("name", NOT_BUNDLED)
def test_names_without_bundled_data_explain_how_to_supply_it(name):
    with pytest.raises(UsageError, match="not bundled") as info:
        load_example_dataset(name)
    assert "path=" in str(info.value) and "VF_DATA_DIR" in str(info.value)


def test_unbundled_split_lists_bundled_ones():
    with pytest.raises(UsageError, match="bundled splits: test, train"):
        load_example_dataset("gsm8k", "validation")
    with pytest.raises(UsageError, match="'train' of 'math'"):
        load_example_dataset("math", "train")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": 5}, "name must be a str"),
        ({"split": 1}, "split must be a str"),
        ({"n": "3"}, "n must be an int"),
        ({"n": True}, "n must be an int"),
        ({"seed": "0"}, "seed must be an int"),
        ({"seed": None}, "seed must be an int"),
        ({"path": 5}, "path must be"),
    ],
)
def test_wrong_argument_types(kwargs, message):
    with pytest.raises(TypeError, match=message):
        load_example_dataset(**kwargs)


# --- local data -----------------------------------------------------------


def test_path_file_with_a_known_name_uses_its_format(tmp_path):
    file = write_jsonl(tmp_path / "aime.jsonl", [{"problem": "p1", "answer": "033"}, {"problem": "p2", "answer": 7}])
    ds = load_example_dataset("aime2024", path=file)
    assert ds["question"] == ["p1", "p2"]
    assert ds["answer"] == ["33", "7"]


def test_path_folder_picks_the_split_file(tmp_path):
    write_jsonl(tmp_path / "test.jsonl", [{"question": "q", "answer": "x\n#### 5"}])
    assert load_example_dataset("gsm8k", "test", path=tmp_path)["answer"] == ["5"]
    with pytest.raises(UsageError, match="no train.jsonl"):
        load_example_dataset("gsm8k", "train", path=str(tmp_path))


def test_path_gzip_file(tmp_path):
    file = tmp_path / "rows.jsonl.gz"
    file.write_bytes(gzip.compress(b'{"question": "q", "answer": "a"}\n\n'))
    assert load_example_dataset(path=file)[0] == {"question": "q", "answer": "a"}


def test_path_without_name_keeps_info_and_task(tmp_path):
    rows = [{"problem": "p", "answer": 3, "info": {"k": 1}, "task": "t", "other": "dropped"}]
    ds = load_example_dataset(path=write_jsonl(tmp_path / "own.jsonl", rows))
    assert ds[0] == {"question": "p", "answer": "3", "info": {"k": 1}, "task": "t"}


def test_data_dir_overrides_bundled_and_supplies_unbundled(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [{"question": "mine", "answer": "#### 1"}])
    write_jsonl(tmp_path / "aime2025" / "test.jsonl", [{"question": "q", "answer": "answer: 12"}])
    monkeypatch.setenv("VF_DATA_DIR", str(tmp_path))
    assert load_example_dataset("gsm8k")["question"] == ["mine"]
    assert load_example_dataset("aime2025")["answer"] == ["12"]
    assert len(load_example_dataset("gsm8k", "train")) == 7473  # not in the folder: bundled


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"question": "q", "answer": "a"}\nnot json\n', r"bad\.jsonl:2 is not valid JSON"),
        ('["a list"]\n', "must be a JSON object"),
        ("", "no rows"),
        ('{"query": "q", "answer": "a"}\n', r"needs one of the fields \['question', 'problem', 'prompt'\]"),
    ],
)
def test_bad_local_files(tmp_path, content, message):
    file = tmp_path / "bad.jsonl"
    file.write_text(content)
    with pytest.raises(UsageError, match=message):
        load_example_dataset(path=file)


def test_missing_path(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_example_dataset("gsm8k", path=tmp_path / "nope.jsonl")


def test_row_filters_apply_to_local_files(tmp_path):
    rows = [{"problem": "e", "answer": "1", "level": "Easy"}, {"problem": "h", "answer": "2", "level": "Hard"}]
    file = write_jsonl(tmp_path / "openrs.jsonl", rows)
    assert load_example_dataset("openrs_easy", path=file)["question"] == ["e"]
    assert load_example_dataset("openrs_hard", path=file)["question"] == ["h"]
    assert load_example_dataset("openrs", path=file)["question"] == ["e", "h"]
