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

4. *vLLM* (``--vllm DTYPE``): ``--vllm-rollouts`` honest rollouts from a real vLLM-on-CPU server, committed by
   its ``/commitment`` route and recomputed by the trainer's copy in the same dtype: the honest error there.

Every batch holds ``--problems`` problems x ``--group`` rollouts; times are per batch: generation (the
worker's sampling with a KV cache) and validation (schema, assignment, values, one prefill per rollout).

    .venv/bin/python bench/toploc.py                         # 13 batches (52 rollouts) per cheat, ~4 min
    .venv/bin/python bench/toploc.py --tampered 2 --honest 4 # smoke run
    .venv/bin/python bench/toploc.py --skip-cheats --vllm float32 --vllm bfloat16  # honest errors of real vLLM
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
from transformers import PreTrainedModel

from trainer_adapter.model.tokenizer import build_tokenizer
from trainer_adapter.validate.assignment import assigned_problems, assignment_seed
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
    commitment_error: list[float] = field(default_factory=list)


def submit(worker: HonestWorker, step: int, args: argparse.Namespace) -> tuple[SubmittedBatch, float]:
    problems = assigned_problems(step, worker.name, DATASET, args.problems)
    start = time.perf_counter()
    batch = worker.batch(step, problems, args.group, seed=assignment_seed(step, worker.name) & 0xFFFF)
    return batch, time.perf_counter() - start


def honest_errors(model: PreTrainedModel, batch: SubmittedBatch, eos_id: int) -> tuple[float, float, float]:
    """The batch's largest commitment error (value or rank), largest logprob error and sampling |z|."""
    value, logprob = 0.0, 0.0
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
    return value, logprob, abs(sampling_z(sampled, collisions, cubes))


def calibrate(
    model: PreTrainedModel, batches: list[SubmittedBatch], eos_id: int, args: argparse.Namespace
) -> tuple[ValidatorConfig, dict[str, float]]:
    """Tolerances from honest batches: the largest error each check sees there, times the margin."""
    value, logprob, z = (max(e) for e in zip(*(honest_errors(model, b, eos_id) for b in batches), strict=True))
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
    for kind in ("honest", *args.cheats):
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
            tally.commitment_error.append(honest_errors(model, batch, eos_id)[0])
        print(f"{kind}: {tally.rejected}/{tally.batches} rejected {dict(tally.checks)}", flush=True)
    return {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "measured_on_honest": measured,
        "config": config.model_dump(),
        "kinds": {
            k: {"batches": t.batches, "rejected": t.rejected, "checks": dict(t.checks),
                "generate_s": statistics.median(t.generate_s), "validate_s": statistics.median(t.validate_s),
                "commitment_error": statistics.median(t.commitment_error)}
            for k, t in kinds.items()
        },
    }  # fmt: skip


def vllm_errors(args: argparse.Namespace, dtype: str) -> dict[str, object]:
    """Honest rollouts from a real vLLM-on-CPU server in ``dtype`` (its ``/commitment`` route), recomputed by the
    trainer's copy of the weights in the same dtype: the errors an honest server needs the tolerances to cover."""
    import socket
    import tempfile
    from pathlib import Path

    import httpx

    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.model.config import ModelConfig
    from trainer_adapter.model.tiny import load_model
    from trainer_adapter.train.export import write_hf_folder
    from trainer_adapter.validate.commitment import Commitment

    torch.set_num_threads(1)
    tokenizer, prompts, model = build_tokenizer(), arithmetic_prompts(DATASET), peaked_tiny_model(seed=0)
    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port for the server
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_hf_folder(model.state_dict(), model, tokenizer, Path(tmp) / "model")
        trainer = load_model(ModelConfig(path=folder))[0].eval().to(getattr(torch, dtype))
        config = InferenceConfig(model=str(folder), port=port, served_model_name="tiny", dtype=dtype)  # type: ignore[arg-type]
        server = InferenceServer(config, python=".venv-vllm/bin/python", log_path=Path(tmp) / "vllm.log")
        value, logprob = 0.0, 0.0
        times: dict[str, list[float]] = {"generate_s": [], "commit_s": [], "validate_s": []}
        server.start(timeout=400)
        try:
            for i in range(args.vllm_rollouts):
                prompt = prompts[i % DATASET]
                body = {"model": "tiny", "prompt": prompt, "max_tokens": args.max_tokens, "temperature": 1.0,
                        "logprobs": 0, "seed": i, "return_token_ids": True}  # fmt: skip
                start = time.perf_counter()
                choice = httpx.post(f"{server.base_url}/completions", json=body, timeout=120).json()["choices"][0]
                times["generate_s"].append(time.perf_counter() - start)
                tokens = {"prompt_ids": prompt, "completion_ids": choice["token_ids"]}
                start = time.perf_counter()
                answer = httpx.post(f"{server.url}/commitment", json={"rollouts": [tokens]}, timeout=120).json()
                times["commit_s"].append(time.perf_counter() - start)
                start = time.perf_counter()
                seen = recompute(trainer, prompt, choice["token_ids"], 1.0, tokenizer.eos_token_id)
                match = compare(Commitment.model_validate(answer["commitments"][0]), seen.hidden, tolerance=1.0)
                times["validate_s"].append(time.perf_counter() - start)
                value = max(value, match.value_error, match.rank_error)
                lps = choice["logprobs"]["token_logprobs"]
                logprob = max(logprob, *(abs(a - b) for a, b in zip(lps, seen.logprobs, strict=True)))
        finally:
            server.stop()
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {"dtype": dtype, "rollouts": args.vllm_rollouts, "commitment_error": value, "logprob_error": logprob,
            **medians}  # fmt: skip


def table(result: dict[str, object]) -> str:
    kinds = result["kinds"]
    assert isinstance(kinds, dict)
    lines = [
        "| worker | batches | rejected | rate | checks that fired | commitment error | generate s | validate s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, row in kinds.items():
        checks = ", ".join(f"{c} {n}" for c, n in sorted(row["checks"].items())) or "-"
        lines.append(
            f"| {kind} | {row['batches']} | {row['rejected']} | {row['rejected'] / row['batches']:.0%} "
            f"| {checks} | {row['commitment_error']:.1e} | {row['generate_s']:.2f} | {row['validate_s']:.3f} |"
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
    parser.add_argument("--cheats", nargs="*", default=list(CHEATS), choices=CHEATS, help="Which cheats to run.")
    parser.add_argument(
        "--vllm",
        action="append",
        default=[],
        choices=["float32", "bfloat16"],
        help="Also measure honest errors of a real vLLM-on-CPU server in this dtype (repeatable).",
    )
    parser.add_argument("--vllm-rollouts", type=int, default=50)
    parser.add_argument("--skip-cheats", action="store_true", help="Only the --vllm measurements.")
    parser.add_argument("--json", help="Write the result here too.")
    args = parser.parse_args()
    result: dict[str, object] = {} if args.skip_cheats else run(args)
    if result:
        print(json.dumps({k: result[k] for k in ("measured_on_honest", "config")}, indent=1))
        print(table(result))
    rows: list[dict[str, object]] = []
    for dtype in args.vllm:
        rows.append(row := vllm_errors(args, dtype))
        print(json.dumps(row), flush=True)
    result["vllm"] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
