"""What a run's ``metadata.json`` says: scores, pass@k, errors, and exactly which code produced them."""

from __future__ import annotations

import importlib.metadata
import json
import math
import platform
import statistics
from collections import Counter, defaultdict
from typing import Any

from verifiers.version import __version__


def pass_at_k(num_samples: int, num_correct: int, k: int) -> float:
    """Unbiased pass@k of one example: 1 - C(n-c, k) / C(n, k)."""
    if k > num_samples:
        raise ValueError(f"k={k} exceeds the {num_samples} samples")
    if num_samples - num_correct < k:
        return 1.0
    return 1.0 - math.comb(num_samples - num_correct, k) / math.comb(num_samples, k)


def pass_at_k_table(outputs: list[dict[str, Any]], threshold: float) -> dict[str, float]:
    """Mean pass@k over examples for k = 1, 2, 4, … up to the rollouts per example."""
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for output in outputs:
        groups[(str(output.get("task")), int(output["example_id"]))].append(float(output["reward"]))
    if not groups:
        return {}
    n = min(len(rewards) for rewards in groups.values())
    table: dict[str, float] = {}
    k = 1
    while k <= n:
        values = [pass_at_k(len(r), sum(x >= threshold for x in r), k) for r in groups.values()]
        table[str(k)] = statistics.fmean(values)
        k *= 2
    return table


def error_counts(outputs: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of every failure kind: rollout errors by type, reward functions that raised, tool errors."""
    counts: Counter[str] = Counter()
    for output in outputs:
        if output.get("error"):
            counts[f"rollout: {str(output['error']).split(':', 1)[0]}"] += 1
        for name in output.get("scoring_errors") or {}:
            counts[f"reward function: {name}"] += 1
        if output.get("tool_errors"):
            counts["tool call errors"] += int(output["tool_errors"])
    return dict(sorted(counts.items()))


_ERROR_CHARS = 300


def rollout_failures(outputs: list[dict[str, Any]]) -> str | None:
    """How many rollouts errored and the first one's error, as one line; ``None`` when none did.

    ``all 10 rollouts failed; first error: ModelError: ...`` when every rollout errored, else
    ``3 of 10 rollouts failed; first error: ...``. The first error is the first in ``outputs`` order.
    """
    failed = [str(o["error"]) for o in outputs if o.get("error")]
    if not failed:
        return None
    first = failed[0].strip().splitlines()[0] if failed[0].strip() else failed[0]
    if len(first) > _ERROR_CHARS:
        first = first[:_ERROR_CHARS] + "…"
    count = f"all {len(outputs)}" if len(failed) == len(outputs) else f"{len(failed)} of {len(outputs)}"
    return f"{count} rollouts failed; first error: {first}"


def package_info(module: str) -> dict[str, Any]:
    """The installed distribution that provides ``module``: name, version, and how it was installed."""
    top = module.split(".")[0]
    dists = importlib.metadata.packages_distributions().get(top, [])
    try:
        # Editable installs map no module to their distribution; environment packages are named after it.
        dist = importlib.metadata.distribution(dists[0] if dists else top.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return {"module": module, "distribution": None, "version": None}
    info: dict[str, Any] = {"module": module, "distribution": dist.metadata["Name"], "version": dist.version}
    direct_url = dist.read_text("direct_url.json")
    if direct_url:
        data = json.loads(direct_url)
        info["source_url"] = data.get("url")
        hashes = (data.get("archive_info") or {}).get("hashes") or {}
        if hashes:
            info["archive_hashes"] = hashes
        info["editable"] = bool((data.get("dir_info") or {}).get("editable"))
    installer = dist.read_text("INSTALLER")
    if installer:
        info["installer"] = installer.strip()
    # Hub installs record the wheel's sha256 here (written by `vf-hub install`).
    wheel_hash = dist.read_text("VF_WHEEL_SHA256")
    if wheel_hash:
        info["wheel_sha256"] = wheel_hash.strip()
    return info


def version_info(env_module: str | None) -> dict[str, Any]:
    return {
        "verifiers": __version__,
        "python": platform.python_version(),
        "environment_package": package_info(env_module) if env_module else None,
    }


def summarize(outputs: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Average reward (± std), average of each metric, error counts and pass@k.

    A rollout that ended in an error (model API, sandbox, timeout) is masked: it
    is counted in ``avg_error`` and ``error_counts`` but not averaged as a zero,
    because it says nothing about the model's answer.
    """
    scored = [o for o in outputs if not o.get("error")]
    rewards = [float(o["reward"]) for o in scored]
    names = sorted({k for o in scored for k in o.get("metrics") or {}})
    return {
        "avg_reward": statistics.fmean(rewards) if rewards else 0.0,
        "std_reward": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        # over the rollouts that report each metric (EnvGroup members report only their own)
        "avg_metrics": {n: statistics.fmean(float(o["metrics"][n]) for o in scored if n in (o.get("metrics") or {}))
                        for n in names},
        "num_scored": len(scored),
        "num_masked": len(outputs) - len(scored),
        "avg_error": statistics.fmean(1.0 if o.get("error") else 0.0 for o in outputs) if outputs else 0.0,
        "error_counts": error_counts(outputs),
        "pass_at_k": pass_at_k_table(scored, threshold),
        "pass_threshold": threshold,
    }


__all__ = ["pass_at_k", "pass_at_k_table", "error_counts", "rollout_failures", "package_info", "version_info",
           "summarize"]
