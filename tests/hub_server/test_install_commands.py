"""The install commands: uv searches the owner's index first; pip gets the exact file and its hash."""

from __future__ import annotations

import shlex

from hub_server.install_commands import (
    InstallTarget,
    owner_index_url,
    pick_file,
    pip_command,
    pip_requirement,
    pip_text,
    uv_command,
    uv_text,
    with_token,
)

TARGET = InstallTarget("http://hub:8000/", "alice", "demo-env", "0.2.0", "/files/abc/demo_env-0.2.0-py3-none-any.whl",
                       "abc")


def test_uv_pins_the_version_and_puts_the_owner_index_first() -> None:
    command = uv_command(TARGET, python="/venv/bin/python")
    assert command[:5] == ["uv", "pip", "install", "--python", "/venv/bin/python"]
    assert "demo-env==0.2.0" in command
    assert command[command.index("--extra-index-url") + 1] == "http://hub:8000/alice/simple/"
    assert command[command.index("--index-strategy") + 1] == "first-index"


def test_pip_names_the_exact_file_with_its_hash() -> None:
    assert pip_requirement(TARGET) == (
        "demo-env @ http://hub:8000/files/abc/demo_env-0.2.0-py3-none-any.whl#sha256=abc")
    assert pip_command(TARGET, python="/py")[:4] == ["/py", "-m", "pip", "install"]


def test_shown_commands_are_quoted_shell_text() -> None:
    assert uv_text(TARGET) == ("uv pip install demo-env==0.2.0 --extra-index-url http://hub:8000/alice/simple/ "
                               "--index-strategy first-index")
    assert pip_text(TARGET) == f"pip install '{pip_requirement(TARGET)}'"
    # A Hub URL taken from a hostile Host header stays one word in the visitor's shell.
    hostile = InstallTarget("http://hub;touch${IFS}owned", "alice", "demo-env", "0.2.0", "/files/abc/f.whl", "abc")
    assert shlex.split(uv_text(hostile))[5] == "http://hub;touch${IFS}owned/alice/simple/"
    assert shlex.split(pip_text(hostile)) == ["pip", "install", pip_requirement(hostile)]


def test_tokens_travel_as_url_credentials_and_only_when_given() -> None:
    assert with_token("http://hub/x/", None) == "http://hub/x/"
    assert with_token("http://old:pw@hub/x/", "vfh_a/b") == "http://__token__:vfh_a%2Fb@hub/x/"
    assert "__token__:t@" in uv_command(TARGET, token="t")[uv_command(TARGET, token="t").index("--extra-index-url") + 1]
    assert owner_index_url("http://hub/", "bob") == "http://hub/bob/simple/"


def test_pick_prefers_a_pure_wheel_then_the_sdist() -> None:
    assert pick_file(["a-1.tar.gz", "a-1-py3-none-any.whl"]) == "a-1-py3-none-any.whl"
    assert pick_file(["a-1-cp311-cp311-linux_x86_64.whl", "a-1.tar.gz"]) == "a-1.tar.gz"
    assert pick_file(["a-1-cp311-cp311-linux_x86_64.whl"]) is None
