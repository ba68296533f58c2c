"""The instance images the sandboxes mount at /image: what they hold, who can read them, and bad builds."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
from swe.image import ImageStore
from swe.instances import read_instances, repo_archive

from verifiers.errors import SandboxError


def _pristine(project: str, path: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(repo_archive(project))) as tar:
        return tar.extractfile(path).read().decode()


def _buggy(row: dict, tmp_path: Path) -> str:
    work = tmp_path / "expected" / row["instance_id"]
    (work / row["file"]).parent.mkdir(parents=True)
    (work / row["file"]).write_text(_pristine(row["project"], row["file"]))
    subprocess.run(["patch", "-p1", "--quiet", "-d", str(work)], input=row["bug_patch"], text=True, check=True)
    return (work / row["file"]).read_text()


def test_an_image_holds_the_buggy_tree_and_a_compiled_pytest_readable_by_everyone(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "images")
    store.root.mkdir()
    rows = [next(r for r in read_instances() if r["project"] == project) for project in ("inflection", "toolz")]
    for row in rows:
        image = Path(store.image_dir(row))
        assert image == store.root / row["instance_id"] and image.is_absolute()
        assert (image / "repo" / row["file"]).read_text() == _buggy(row, tmp_path)  # never the pristine source
        test_module = row["FAIL_TO_PASS"][0].split("::")[0]
        assert (image / "repo" / test_module).read_text() == _pristine(row["project"], test_module)
        assert (image / "pytest" / "_pytest" / "__pycache__").is_dir() and (image / "pytest" / "pytest").is_dir()
        for directory, _, names in os.walk(image):
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o755
            assert all(os.stat(os.path.join(directory, n)).st_mode & 0o444 == 0o444 for n in names)
    # one pytest for all images: hard links, not copies
    first, second = (store.root / r["instance_id"] / "pytest" / "pytest" / "__init__.py" for r in rows)
    assert os.stat(first).st_ino == os.stat(second).st_ino
    built = os.stat(store.root / rows[0]["instance_id"]).st_mtime_ns
    assert store.image_dir(rows[0]) == str(store.root / rows[0]["instance_id"])
    assert os.stat(store.root / rows[0]["instance_id"]).st_mtime_ns == built  # reused, not rebuilt


def test_a_bug_that_does_not_apply_is_a_sandbox_error_and_leaves_no_image(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    row = read_instances()[0]
    lines = row["bug_patch"].splitlines(keepends=True)
    removed = next(i for i, line in enumerate(lines) if line.startswith("-") and not line.startswith("---"))
    lines[removed] = "-this line is not in the file\n"  # a hunk that does not match the tree
    broken = {**row, "bug_patch": "".join(lines)}
    with pytest.raises(SandboxError, match=f"could not build the image of {row['instance_id']}"):
        store.image_dir(broken)
    assert not (tmp_path / row["instance_id"]).exists()
    assert not any(tmp_path.iterdir())  # no half-built staging left behind
    assert Path(store.image_dir(row)).is_dir()  # the store still works
