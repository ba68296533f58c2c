"""Host-side file transfer below a directory the sandbox controls: every way out is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verifiers.sandboxes import SandboxFileNotFoundError, SandboxFileTooLargeError, SandboxPathError
from verifiers.sandboxes.local.files import read_file, split_sandbox_path, write_file

AREAS = {"/workspace": "/host/ws", "/tmp": "/host/tmp"}


@pytest.mark.parametrize(("path", "expected"), [
    ("a.txt", ("/host/ws", ["a.txt"])),
    ("/workspace/d/a.txt", ("/host/ws", ["d", "a.txt"])),
    ("/tmp/x", ("/host/tmp", ["x"])),
    ("d//e/./f", ("/host/ws", ["d", "e", "f"])),
])
def test_paths_map_onto_the_areas(path: str, expected: tuple) -> None:
    assert split_sandbox_path(path, AREAS, "/workspace") == expected


@pytest.mark.parametrize("path", ["/etc/passwd", "/workspace", "/workspace/..", "../x", "a/../../b", "/tmpx/y", "/"])
def test_paths_leaving_the_areas_are_refused(path: str) -> None:
    with pytest.raises(SandboxPathError):
        split_sandbox_path(path, AREAS, "/workspace")


def test_symlinks_fifos_and_directories_are_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "link").symlink_to(outside / "secret")
    (root / "dirlink").symlink_to(outside)
    os.mkfifo(root / "fifo")
    (root / "dir").mkdir()
    for parts in (["link"], ["dirlink", "secret"], ["fifo"], ["dir"]):
        with pytest.raises(SandboxPathError):
            read_file(str(root), parts, "/".join(parts), 100)
    for parts in (["link"], ["dirlink", "new"], ["dir"], ["dirlink", "a", "b"]):
        with pytest.raises(SandboxPathError):
            write_file(str(root), parts, "/".join(parts), b"x", None)
    assert sorted(p.name for p in outside.iterdir()) == ["secret"] and (outside / "secret").read_text() == "s"


def test_write_creates_parents_and_read_limits_size(tmp_path: Path) -> None:
    write_file(str(tmp_path), ["a", "b", "c.txt"], "a/b/c.txt", b"12345", None)
    assert read_file(str(tmp_path), ["a", "b", "c.txt"], "c", 5) == b"12345"
    write_file(str(tmp_path), ["a", "b", "c.txt"], "a/b/c.txt", b"9", None)  # replaced, not appended
    assert read_file(str(tmp_path), ["a", "b", "c.txt"], "c", 5) == b"9"
    write_file(str(tmp_path), ["big"], "big", b"x" * 10, None)
    with pytest.raises(SandboxFileTooLargeError):
        read_file(str(tmp_path), ["big"], "big", 9)
    with pytest.raises(SandboxFileNotFoundError):
        read_file(str(tmp_path), ["nope", "x"], "nope/x", 9)
