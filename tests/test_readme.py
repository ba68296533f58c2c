"""Every code block of the README runs as written, as a newcomer runs it after the first set-up command.

The blocks are read with markdown-it (the Hub's own Markdown library), in order, and run in a copy of the
checkout's files with a fresh venv holding what the README tells a newcomer to add (the SDK's wheel with the
``tui`` extra, the Hub's distribution ``verifiers-hub``) and the ``reverse_text`` package (the set-up installs
every environment). Python blocks run one after another in one interpreter, as a reader pastes them into one
session; bash blocks run line by line in one shell each, a line ending in ``&`` waiting for its server's port
to open (as a reader waits for READY), ``vf-tui`` in a real terminal (tmux). The only change to what is
written: the servers' ports (8000, 8080) become free ones, in the blocks and in the copy's
``configs/endpoints.toml``.

The first block, the two set-up commands, is the suite's own command and the main job
(``tests/trainer_adapter/test_main_job.py``); it is checked to be exactly those two commands, not run here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.fresh_venv import ISOLATED, ROOT, sdk_venv
from tests.terminal import tmux_terminal

SETUP = ["bash scripts/main.sh", "bash scripts/test.sh"]
PORTS = ("8000", "8080")
# Waits until a port on 127.0.0.1 accepts connections: what a reader does after starting a server with `&`.
WAIT_PORT = """wait_port() {
  for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on port $1" >&2; return 1
}
trap 'kill $(jobs -p) 2>/dev/null' EXIT
"""


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # 1-based, where the fence opens


def readme_blocks() -> list[Block]:
    tokens = MarkdownIt().parse((ROOT / "README.md").read_text())
    return [Block(t.info.strip(), t.content, t.map[0] + 1 if t.map else 0) for t in tokens if t.type == "fence"]


def commands(block: Block) -> list[str]:
    """The block's command lines: comments and blank lines dropped, trailing comments kept (bash drops them)."""
    return [line for line in block.text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_opens_with_exactly_the_two_setup_commands() -> None:
    first = readme_blocks()[0]
    assert first.language == "bash"
    assert [line.split("#")[0].strip() for line in commands(first)] == SETUP


def test_every_block_is_a_kind_this_test_runs() -> None:
    blocks = readme_blocks()
    assert len(blocks) >= 5
    for block in blocks:
        assert block.language in ("python", "bash"), f"README line {block.line}: a {block.language!r} block"


@pytest.mark.slow
def test_every_readme_block_runs_as_written(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    # what a clone has (and, while working, files not committed yet): tracked and untracked, never ignored ones
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    venv = sdk_venv(tmp_path, extras="tui", packages=(ROOT / "environments" / "reverse_text",), parts=("hub",))
    ports = {port: str(free_port()) for port in PORTS}
    endpoints = repo / "configs" / "endpoints.toml"
    endpoints.write_text(on_free_ports(endpoints.read_text(), ports))
    env = {**os.environ, **ISOLATED, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv),
           "COLUMNS": "200"}
    for name in ("OPENAI_API_KEY", "VF_HUB_URL", "VF_HUB_TOKEN", "PYTHONPATH"):
        env.pop(name, None)  # a newcomer's shell has none of them

    blocks = readme_blocks()[1:]
    python = "\n\n".join(block.text for block in blocks if block.language == "python")
    done = subprocess.run([venv / "bin" / "python", "-c", python], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr

    for block in (b for b in blocks if b.language == "bash"):
        lines = [on_free_ports(line, ports) for line in commands(block)]
        shell = [line for line in lines if not line.startswith("vf-tui")]
        if shell:
            run_bash(block, shell, repo, env)
        for line in lines:
            if line.startswith("vf-tui"):
                browse(line, repo, env)

    # the Hub block's install replaced the source install with the Hub's wheel
    origin = subprocess.run([venv / "bin" / "python", "-c", "import importlib.metadata as m; "
                             "print(m.distribution('reverse-text').read_text('direct_url.json'))"],
                            capture_output=True, text=True, cwd=tmp_path, env=env)
    assert origin.stdout.strip() == "None", origin.stdout + origin.stderr
    assert (repo / "ds" / "dataset_info.json").is_file()  # --save-dataset ds/


def on_free_ports(text: str, ports: dict[str, str]) -> str:
    for port, free in ports.items():
        text = re.sub(rf"(?<=[:\s]){port}\b", free, text)
    return text


def run_bash(block: Block, lines: list[str], cwd: Path, env: dict[str, str]) -> None:
    script = [WAIT_PORT, "set -euo pipefail"]
    for line in lines:
        script.append(f"echo {shlex.quote('+ ' + line)}")
        script.append(line)
        if line.split("#")[0].rstrip().endswith("&"):
            port = re.search(r"--port (\d+)", line)
            assert port, f"README line {block.line}: a server started with & names no --port: {line}"
            script.append(f"wait_port {port.group(1)}")
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)
    where = f"README block at line {block.line}"
    assert done.returncode == 0, f"{where}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    evals = sum(line.startswith("vf-eval") for line in lines)
    assert done.stdout.count("errors: none") == evals, f"{where}\n{done.stdout[-6000:]}"


def browse(line: str, cwd: Path, env: dict[str, str]) -> None:
    """``vf-tui`` as typed, in a real terminal: the runs the blocks before made are listed, then ``q`` quits."""
    with tmux_terminal(cwd, {"PATH": env["PATH"], "VIRTUAL_ENV": env["VIRTUAL_ENV"]}) as terminal:
        term = terminal("bash", "-c", line)
        shown = term.wait_for("4 runs under outputs", "reverse-text  my-model", timeout=60)
        assert "Traceback" not in shown
        term.keys("q")
        deadline = time.monotonic() + 30
        while not term.exited() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert term.exited(), term.screen()
