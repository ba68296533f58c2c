"""Verified rollouts from untrusted workers: detection and false-positive rates, validator vs generation time.

In one process, on the trainer's tiny model made peaked (``peaked_tiny_model``; float32, CPU, one thread):

1. *Calibration.* ``--calibration`` honest workers submit a batch each; the validator's tolerances are set from
   what they need (commitment and logprob: ``--margin`` times the largest honest error; the sampling
   threshold: the larger of 5 and 1.5 times the largest honest |z|, z being near normal for honest work).
   The EOS floor is fixed (``--eos-floor``): an honest rollout falls under it with probability <= max_tokens x floor.
2. *Honest.* ``--honest`` other honest workers (other names, so other problems and seeds): each rejection is
   a false positive.
3. *Tampered.* For each cheat in :mod:`trainer_adapter.validate.cheats`, ``--tampered`` workers submit a
   batch each: the share rejected is the detection rate; the table names the checks that fired.

Every batch holds ``--problems`` problems x ``--group`` rollouts; times are per batch: generation (the
worker's sampling with a KV cache) and validation (schema, assignment, values, one prefill per rollout).

    .venv/bin/python bench/toploc.py                         # 13 batches (52 rollouts) per cheat, ~4 min
    .venv/bin/python bench/toploc.py --tampered 2 --honest 4 # smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

import torch
from prometheus_client import CollectorRegistry

from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.validate.assignment import assigned_problems
from trainer_adapter.validate.batch import SubmittedBatch
from trainer_adapter.validate.cheats import CHEATS, CheatModels, cheater, perturbed, quantised
from trainer_adapter.validate.checks import sampling_z
from trainer_adapter.validate.commitment import compare
from trainer_adapter.validate.metrics import ValidatorMetrics
from trainer_adapter.validate.prefill import recompute
from trainer_adapter.validate.validator import Validator, ValidatorConfig
from trainer_adapter.validate.workers import HonestWorker, Sampling, arithmetic_prompts, peaked_tiny_model

DATASET = 64


@dataclass
class Tally:
    """Batches submitted by one kind of worker, how many were rejected, by which checks, and the times."""

    batches: int = 0
    rejected: int = 0
    checks: Counter[str] = field(default_factory=Counter)
    generate_s: list[float] = field(default_factory=list)
    validate_s: list[float] = field(default_factory=list)


def submit(worker: HonestWorker, step: int, args: argparse.Namespace) -> tuple[SubmittedBatch, float]:
    problems = assigned_problems(step, worker.name, DATASET, args.problems)
    start = time.perf_counter()
    batch = worker.batch(step, problems, args.group, seed=hash((step, worker.name)) & 0xFFFF)
    return batch, time.perf_counter() - start


def calibrate(
    model: torch.nn.Module,
    batches: list[SubmittedBatch],
    eos_id: int,
    args: argparse.Namespace,
) -> tuple[ValidatorConfig, dict[str, float]]:
    """Tolerances from honest batches: the largest error each check sees there, times the margin."""
    value, logprob, z = 0.0, 0.0, 0.0
    for batch in batches:
        sampled: list[float] = []
        collisions: list[float] = []
        cubes: list[float] = []
        for r in batch.rollouts:
            seen = recompute(model, r.prompt_ids, r.completion_ids, batch.temperature, eos_id)
            match = compare(r.commitment, seen.hidden, tolerance=1.0)
            value = max(value, match.value_error, match.rank_error)
            logprob = max(logprob, *(abs(a - b) for a, b in zip(r.logprobs, seen.logprobs, strict=True)))
            sampled += seen.sampled_probs
            collisions += seen.collisions
            cubes += seen.cubes
        z = max(z, abs(sampling_z(sampled, collisions, cubes)))
    measured = {"commitment_error": value, "logprob_error": logprob, "sampling_abs_z": z}
    config = ValidatorConfig(
        problems_per_step=args.problems, rollouts_per_problem=args.group,
        commitment_tolerance=max(value * args.margin, 1e-6), logprob_tolerance=max(logprob * args.margin, 1e-6),
        eos_floor=args.eos_floor, sampling_threshold=max(5.0, 1.5 * z),
    )  # fmt: skip
    return config, measured


def run(args: argparse.Namespace) -> dict[str, object]:
    torch.set_num_threads(1)  # the machine's cores are shared; one thread is also the fastest for this model
    eos_id = build_tokenizer().eos_token_id
    prompts = arithmetic_prompts(DATASET)
    model = peaked_tiny_model(seed=0)
    sampling = Sampling(max_tokens=args.max_tokens)
    models = CheatModels(
        other=perturbed(model, seed=1, scale=args.other_scale), quantised=quantised(model, bits=args.bits),
        small=peaked_tiny_model(seed=1, num_layers=1),
    )  # fmt: skip

    def honest(name: str) -> HonestWorker:
        return HonestWorker(name=name, model=model, prompts=prompts, eos_id=eos_id, sampling=sampling)

    calibration = [submit(honest(f"calibration-{i}"), 0, args)[0] for i in range(args.calibration)]
    config, measured = calibrate(model, calibration, eos_id, args)
    validator = Validator(model, eos_id, prompts, config, metrics=ValidatorMetrics(CollectorRegistry()))
    kinds: dict[str, Tally] = {}
    for kind in ("honest", *CHEATS):
        tally = kinds[kind] = Tally()
        for i in range(args.honest if kind == "honest" else args.tampered):
            worker = honest(f"{kind}-{i}")
            if kind != "honest":
                worker = cheater(kind, worker, models, DATASET)
            batch, generate_s = submit(worker, step=1 + i, args=args)
            verdict = validator.validate(batch.model_dump())
            tally.batches += 1
            tally.rejected += not verdict.accepted
            tally.checks.update(verdict.checks)
            tally.generate_s.append(generate_s)
            tally.validate_s.append(verdict.seconds)
        print(f"{kind}: {tally.rejected}/{tally.batches} rejected {dict(tally.checks)}", flush=True)
    return {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "measured_on_honest": measured,
        "config": config.model_dump(),
        "kinds": {
            k: {"batches": t.batches, "rejected": t.rejected, "checks": dict(t.checks),
                "generate_s": statistics.median(t.generate_s), "validate_s": statistics.median(t.validate_s)}
            for k, t in kinds.items()
        },
    }  # fmt: skip


def table(result: dict[str, object]) -> str:
    kinds = result["kinds"]
    assert isinstance(kinds, dict)
    lines = [
        "| worker | batches | rejected | rate | checks that fired | generate s/batch | validate s/batch |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, row in kinds.items():
        checks = ", ".join(f"{c} {n}" for c, n in sorted(row["checks"].items())) or "-"
        lines.append(
            f"| {kind} | {row['batches']} | {row['rejected']} | {row['rejected'] / row['batches']:.0%} "
            f"| {checks} | {row['generate_s']:.2f} | {row['validate_s']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calibration", type=int, default=10, help="Honest batches that set the tolerances.")
    parser.add_argument("--honest", type=int, default=50, help="Honest batches measured for false positives.")
    parser.add_argument("--tampered", type=int, default=13, help="Tampered batches per cheat.")
    parser.add_argument("--problems", type=int, default=2, help="Problems per batch.")
    parser.add_argument("--group", type=int, default=2, help="Rollouts per problem.")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--margin", type=float, default=10.0, help="Tolerance = margin x largest honest error.")
    parser.add_argument("--eos-floor", type=float, default=1e-4)
    parser.add_argument("--other-scale", type=float, default=0.01, help="other_weights: noise x each weight's std.")
    parser.add_argument("--bits", type=int, default=8, help="quantised: integer bits per weight.")
    parser.add_argument("--json", help="Write the result here too.")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps({k: result[k] for k in ("measured_on_honest", "config")}, indent=1))
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
