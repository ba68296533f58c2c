"""Where the trainer's log lines go when a command of this project runs it.

Library code logs (``logging.getLogger("trainer_adapter...")``) and prints nothing; a command-line entry point
calls :func:`log_to_stdout` once, so that a user of ``vf-train`` reads each RL step and each server going down or
coming back as plain lines in its output, as before, while an application that imports the trainer keeps its own
logging configuration.
"""

from __future__ import annotations

import logging
import sys

_MARK = "_trainer_adapter_stdout"


def log_to_stdout(level: int = logging.INFO) -> None:
    """Send the ``trainer_adapter`` loggers' records at ``level`` and above to stdout, one plain line each (once per
    process; a second call changes nothing). They stop propagating to the root logger, so none shows twice."""
    logger = logging.getLogger("trainer_adapter")
    if not any(getattr(h, _MARK, False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        setattr(handler, _MARK, True)
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


__all__ = ["log_to_stdout"]
