"""What every trainer process does at its edges: read its config from argv, log a step, close the group."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from trainer_adapter.config import load_config, parse_override
from trainer_adapter.train.distributed import close_distributed

C = TypeVar("C", bound=BaseModel)


def log_step(path: Path, line: dict[str, Any]) -> None:
    """Append one step's metrics to the JSONL log and print them on one line."""
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in line.items()), flush=True)


def run_rank(module: str, config_cls: type[C], run: Callable[[C], Any], argv: list[str] | None = None) -> None:
    """``python -m MODULE CONFIG.toml [KEY=VALUE ...]`` for one rank (torchrun starts several)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        raise SystemExit(f"usage: python -m {module} CONFIG.toml [KEY=VALUE ...]")
    config = load_config(config_cls, Path(args[0]), dict(parse_override(a) for a in args[1:]))
    try:
        run(config)
    finally:
        close_distributed()


__all__ = ["log_step", "run_rank"]
