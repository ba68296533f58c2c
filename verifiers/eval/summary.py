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


def render_samples(outputs: list[dict[str, Any]], console: Console, count: int = 3, longest: int = 600) -> None:
    """The first rollout of each of the first ``count`` examples: reward, prompt, completion, error.

    Prompts and completions are cut to ``longest`` characters each (a long system prompt would fill the
    screen); ``results.jsonl`` has them whole.
    """
    from verifiers.logs import render_messages, rollout_view

    firsts: dict[Any, dict[str, Any]] = {}
    for output in outputs:
        key = (output.get("task"), output.get("example_id"))
        if key not in firsts and len(firsts) < count:
            firsts[key] = output
    if not firsts:
        return
    console.rule(f"sample rollouts ({len(firsts)} of {len(outputs)})", characters="─", align="left")
    for number, output in enumerate(firsts.values(), start=1):
        prompt = _cut(render_messages(output.get("prompt") or ""), longest)
        completion = _cut(render_messages(output.get("completion") or ""), longest)
        console.print(rollout_view(number, float(output.get("reward") or 0.0), prompt, completion, output.get("error")))


def _cut(text: str, longest: int) -> str:
    return text if len(text) <= longest else text[: longest - 1] + "…"


__all__ = ["render_samples", "render_summary"]
