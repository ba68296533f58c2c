"""Running a repository's tests with pytest and reading which passed: the same command at build and score time.

The command asks pytest for a one-line outcome per test (``-rA``); :func:`parse_outcomes` reads those lines.
A test counts as passed only when pytest says ``PASSED``: failed, errored (a module that no longer imports)
and missing tests all count as not passed.
"""

from __future__ import annotations

import re
import shlex

# No cache directory (the tree stays as the model left it), no colour, short tracebacks for the issue text.
PYTEST_ARGS = ("-p", "no:cacheprovider", "-rA", "--color=no", "--tb=short", "-q")
# The id runs to the end of the line, or to the " - " before a failure's message (ids may hold spaces).
_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+?)(?: - .*)?$")


def pytest_command(test_ids: list[str], python: str = "python3") -> str:
    """The shell command that runs ``test_ids`` (pytest node ids, relative to the repository root)."""
    return " ".join([python, "-m", "pytest", *PYTEST_ARGS, "--", *map(shlex.quote, test_ids)])


def parse_outcomes(output: str) -> dict[str, str]:
    """Node id -> ``PASSED``/``FAILED``/``ERROR``/... from pytest's ``-rA`` summary lines."""
    outcomes: dict[str, str] = {}
    for line in output.splitlines():
        match = _OUTCOME.match(line)
        if match:
            outcomes[match.group(2)] = match.group(1)
    return outcomes


def passed(outcomes: dict[str, str], test_ids: list[str]) -> list[bool]:
    """For each of ``test_ids``, whether pytest reported it ``PASSED``."""
    return [outcomes.get(test_id) == "PASSED" for test_id in test_ids]


def failure_report(output: str, test_ids: list[str], max_tests: int = 3, tail_lines: int = 12) -> str:
    """The tail of each failing test's traceback section (``___ name ___`` blocks), at most ``max_tests``."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        header = re.match(r"^_{3,} (.+?) _{3,}$", line)
        if header:
            current = sections.setdefault(header.group(1), [])
            continue
        if re.match(r"^={3,} ", line):
            current = None
        elif current is not None:
            current.append(line)
    blocks = []
    for test_id in test_ids[:max_tests]:
        name = test_id.split("::", 1)[-1].replace("::", ".")
        lines = sections.get(name) or next((v for k, v in sections.items() if name.endswith(k)), [])
        body = "\n".join(lines[-tail_lines:]).strip()
        blocks.append(f"{test_id}\n{body}" if body else test_id)
    return "\n\n".join(blocks)
