"""vf-train shows the trainer's log lines on stdout; the library itself prints nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_log_to_stdout_shows_info_lines_once_as_plain_text() -> None:
    done = _run("import logging\nfrom trainer_adapter.logs import log_to_stdout\n"
                "logging.basicConfig(format='ROOT %(message)s')\n"  # an application's own handler sees none twice
                "log_to_stdout()\nlog_to_stdout()\n"
                "logging.getLogger('trainer_adapter.orchestrator').info('step 1/2  reward 0.500')\n"
                "logging.getLogger('trainer_adapter.orchestrator').debug('not shown')\n"
                "logging.getLogger('other').warning('theirs')\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "step 1/2  reward 0.500\n" and done.stderr == "ROOT theirs\n"


def test_without_it_the_library_prints_nothing_and_logs_through_the_applications_logging() -> None:
    done = _run("import logging\nlogging.basicConfig(format='APP %(name)s %(message)s', level=logging.INFO)\n"
                "import trainer_adapter.orchestrator.orchestrator as o\no.log.info('step 1/2')\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == "APP trainer_adapter.orchestrator step 1/2\n"
