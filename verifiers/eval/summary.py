"""The end-of-run table ``vf-eval`` prints."""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console
from rich.table import Table


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {std:.3f}"


def render_summary(outputs: list[dict[str, Any]], metadata: dict[str, Any], console: Console) -> None:
    """Reward and each metric (mean ± std), pass@k, error counts, and where the files are."""
    table = Table(title=f"{metadata.get('env_id')} · {metadata.get('model')} · "
                        f"{metadata.get('num_examples')} examples × {metadata.get('rollouts_per_example')} rollouts")
    table.add_column("metric")
    table.add_column("mean ± std", justify="right")
    scored = [o for o in outputs if not o.get("error")]  # errored rollouts are masked (see metadata.summarize)
    table.add_row("reward", _mean_std([float(o["reward"]) for o in scored]))
    for name in sorted({k for o in scored for k in o.get("metrics") or {}}):
        table.add_row(name, _mean_std([float(o["metrics"][name]) for o in scored if name in o["metrics"]]))
    if len(scored) < len(outputs):
        table.add_row("masked (errored) rollouts", str(len(outputs) - len(scored)))
    for k, value in (metadata.get("pass_at_k") or {}).items():
        table.add_row(f"pass@{k} (reward ≥ {metadata.get('pass_threshold')})", f"{value:.3f}")
    console.print(table)
    errors = metadata.get("error_counts") or {}
    if errors:
        console.print("[bold red]errors[/]: " + ", ".join(f"{kind} × {n}" for kind, n in errors.items()))
    else:
        console.print("errors: none")


__all__ = ["render_summary"]
