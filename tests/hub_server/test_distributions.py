"""Checking uploaded files: filenames (no paths), wheel and sdist metadata, name/version agreement."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from hub_server.distributions import SDIST, WHEEL, parse_filename, read_metadata
from hub_server.errors import BadRequest, TooLarge
from hub_server.testing.dists import make_gzip_bomb, make_sdist, make_wheel, metadata_text


def test_filenames_split_into_type_name_and_version() -> None:
    wheel = parse_filename("Demo_Env-0.1.0-py3-none-any.whl")
    assert (wheel.packagetype, wheel.name, str(wheel.version)) == (WHEEL, "demo-env", "0.1.0")
    sdist = parse_filename("demo_env-0.2.0.tar.gz")
    assert (sdist.packagetype, sdist.name, str(sdist.version)) == (SDIST, "demo-env", "0.2.0")


@pytest.mark.parametrize("filename", [
    "../demo_env-0.1.0-py3-none-any.whl", "a/demo_env-0.1.0-py3-none-any.whl", "..\\x-0.1.0.tar.gz",
    "/etc/passwd", "demo_env-0.1.0.zip", "demo_env-0.1.0-py3-none-any.exe", "demo-env.whl",
    ".hidden-0.1.0.tar.gz", "demo_env-0.1.0+local-py3-none-any.whl", "x\x00-0.1.0.tar.gz",
    "demo_env-0.1.0.tar.gz\n",
])
def test_bad_filenames_are_refused(filename: str) -> None:
    with pytest.raises(BadRequest):
        parse_filename(filename)


def test_wheel_and_sdist_metadata_are_read_and_checked(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "Demo_Env", "0.1.0", requires_python=">=3.9", summary="Hi")
    meta = read_metadata(wheel, parse_filename(wheel.name))
    assert (meta.name, meta.display_name, str(meta.version)) == ("demo-env", "Demo_Env", "0.1.0")
    assert meta.requires_python == ">=3.9" and meta.summary == "Hi"
    assert meta.raw == zipfile.ZipFile(wheel).read("Demo_Env-0.1.0.dist-info/METADATA")
    sdist = make_sdist(tmp_path, "demo-env", "0.1.0")
    assert read_metadata(sdist, parse_filename(sdist.name)).name == "demo-env"


def test_metadata_naming_another_project_or_version_is_refused(tmp_path: Path) -> None:
    other_name = make_wheel(tmp_path / "a", "demo-env", "0.1.0", metadata=metadata_text("evil-env", "0.1.0"))
    with pytest.raises(BadRequest, match="metadata names the project"):
        read_metadata(other_name, parse_filename(other_name.name))
    other_version = make_wheel(tmp_path / "b", "demo-env", "0.1.0", metadata=metadata_text("demo-env", "0.9"))
    with pytest.raises(BadRequest, match="does not match"):
        read_metadata(other_version, parse_filename(other_version.name))
    other_dist_info = make_wheel(tmp_path / "c", "demo-env", "0.1.0", dist_info_name="evil_env")
    with pytest.raises(BadRequest, match="dist-info"):
        read_metadata(other_dist_info, parse_filename(other_dist_info.name))


def test_malformed_archives_and_metadata_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "demo_env-0.1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(BadRequest, match="not a valid wheel"):
        read_metadata(junk, parse_filename(junk.name))
    empty = tmp_path / "e" / "demo_env-0.1.0-py3-none-any.whl"
    empty.parent.mkdir()
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("demo_env/__init__.py", "")
    with pytest.raises(BadRequest, match="exactly one"):
        read_metadata(empty, parse_filename(empty.name))
    bad_sdist = tmp_path / "demo_env-0.1.0.tar.gz"
    bad_sdist.write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(BadRequest, match="not a valid sdist"):
        read_metadata(bad_sdist, parse_filename(bad_sdist.name))
    no_version = make_wheel(tmp_path / "n", "demo-env", "0.1.0", metadata="Metadata-Version: 2.1\nName: demo-env\n")
    with pytest.raises(BadRequest, match="invalid core metadata"):
        read_metadata(no_version, parse_filename(no_version.name))


def test_an_sdist_unpacking_past_the_limit_is_refused_once_it_gets_there(tmp_path: Path) -> None:
    bomb = make_gzip_bomb(tmp_path, "demo-env", "0.1.0", unpacked=64 * 1024 * 1024)
    assert bomb.stat().st_size < 1024 * 1024  # ~1000:1
    with pytest.raises(TooLarge, match=r"demo_env-0.1.0.tar.gz unpacked is larger than this Hub's limit of 1048576"):
        read_metadata(bomb, parse_filename(bomb.name), max_unpacked=1024 * 1024)
    # the same archive within a limit that holds it: read to the end, accepted
    assert read_metadata(bomb, parse_filename(bomb.name), max_unpacked=65 * 1024 * 1024).name == "demo-env"


def test_an_sdist_with_two_pkg_infos_is_refused(tmp_path: Path) -> None:
    twice = make_gzip_bomb(tmp_path, "demo-env", "0.1.0", unpacked=10, extra_pkg_info=True)
    with pytest.raises(BadRequest, match="PKG-INFO more than once"):
        read_metadata(twice, parse_filename(twice.name))
