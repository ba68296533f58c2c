"""The main job config ``scripts/gpu_smoke.sh`` runs: its file plus ``KEY=VALUE`` options, checked before the GPU
time is spent, written as one JSON file that both the model build and ``vf-train main`` then read.

    python -m trainer_adapter.gpu_smoke_config CONFIG OUT_JSON OUTPUT_DIR VLLM_PYTHON [KEY=VALUE ...]

prints the job's ``output_dir`` (the only line on stdout); a bad file, key or value exits 2 with the reason.
The script's own settings (``output_dir``, ``vllm_python``) come first, so an option given to the script
wins over them. On one GPU the server must leave memory to the trainer: ``server.gpu_memory_utilization``
has to be set (vLLM's default, 0.9, would leave the trainer ranks none).
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainer_adapter.config import load_config, parse_override
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.main_job_config import MainJobConfig
from verifiers.errors import UsageError

USAGE = "usage: python -m trainer_adapter.gpu_smoke_config CONFIG OUT_JSON OUTPUT_DIR VLLM_PYTHON [KEY=VALUE ...]"


def resolve(config: Path, options: list[str], output_dir: Path, vllm_python: Path) -> MainJobConfig:
    """``config`` with the script's settings, then ``options`` (``KEY=VALUE``, as config overrides) applied."""
    overrides = {"output_dir": str(output_dir), "vllm_python": str(vllm_python)}
    overrides.update(dict(parse_override(option) for option in options))
    resolved = load_config(MainJobConfig, config, overrides)
    if resolved.server.gpu_memory_utilization is None:
        raise TrainerConfigError(
            "server.gpu_memory_utilization is unset: on one GPU vLLM would take 90% of its memory and leave the "
            "trainer none; set it (e.g. 0.3) in the config or as server.gpu_memory_utilization=0.3"
        )
    return resolved


def main(argv: list[str] | None = None) -> int:
    """Resolve, write OUT_JSON, print ``output_dir``; returns the exit status (2: bad input)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 4:
        print(USAGE, file=sys.stderr)
        return 2
    config, out_json, output_dir, vllm_python, *options = args
    try:
        resolved = resolve(Path(config), options, Path(output_dir), Path(vllm_python))
    except UsageError as e:
        print(f"gpu_smoke: {e}", file=sys.stderr)
        return 2
    Path(out_json).parent.mkdir(parents=True, exist_ok=True)
    Path(out_json).write_text(resolved.model_dump_json(indent=2))
    print(resolved.output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "resolve"]
