"""Every policy-loss variant of ``vf-train rl`` on the main job's task, same warm start, seeds and budget.

Each variant is one ``[trainer.loss]`` table (plus, for one of them, the orchestrator's advantage
normalisation) applied to the main job's RL recipe (``trainer_adapter.main_job_phases.rl_run_config``) on the
``arithmetic`` environment. The schedule is one step off-policy (``max_async_level = 1``, continuous
batching), because on-policy (synchronous) every importance ratio is exactly 1 and IcePop, PPO, GSPO and
CISPO then take the same gradient: the variants differ only where the rollouts lag the trained weights.
One vLLM server is started once; each run loads the warm start into it first (``vf-train rl`` does).

Per run it prints the held-out reward before → after (the eval split, ``--eval-samples`` replies per row at
the training temperature, and greedy; computed in this process from the final weights, as
``bench/learning_reference.py`` does), the training reward of the first and last five steps, the largest
mismatch KL and masked share the trainer logged, and seconds per step; then, per variant, the mean gain over
the seeds with their spread. ``--png`` draws each variant's training reward per step (mean over seeds, range
shaded) in one figure.

    .venv/bin/python bench/loss_ablation.py --warm-start outputs/main_job/sft/weights/step_* --png ablation.png
    .venv/bin/python bench/loss_ablation.py --warm-start DIR --variants icepop,cispo --seeds 0,1 --steps 20
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# name -> (trainer.loss table, orchestrator overrides). The defaults of each type are its spec's
# (trainer_adapter/loss/*.py docstrings); these rows change one thing at a time from IcePop, the default.
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "icepop": ({"type": "icepop"}, {}),
    "ppo": ({"type": "ppo"}, {}),
    "gspo": ({"type": "gspo"}, {}),
    "cispo": ({"type": "cispo"}, {}),
    "icepop-seqnorm": ({"type": "icepop", "normalization": "sequence"}, {}),
    "icepop-kl": ({"type": "icepop", "kl_coef": 0.05}, {}),
    "icepop-stdnorm": ({"type": "icepop"}, {"advantage_std_normalize": True}),
}
ASYNC_ONE_STEP = {"max_async_level": 1, "continuous_batching": True, "max_off_policy_steps": 1}


def load_reference_bench() -> ModuleType:
    """``bench/learning_reference.py`` (a script, not a package): its budget, configs and held-out measurement."""
    spec = importlib.util.spec_from_file_location("learning_reference", ROOT / "bench" / "learning_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@dataclass
class AblationRun:
    variant: str
    seed: int
    train_rewards: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    mismatch_kl_max: float = 0.0
    masked_max: float = 0.0


def run_config(ref: ModuleType, variant: str, warm_start: Path, budget: Any, out: Path, url: str) -> dict[str, Any]:
    """The main job's ``vf-train rl`` config for ``budget``, with the variant's loss and the one-step-off schedule."""
    loss, orchestrator = VARIANTS[variant]
    config: dict[str, Any] = ref.stack_config(warm_start, budget, out, url, {**ASYNC_ONE_STEP, **orchestrator})
    config["output_dir"] = str(out / "rl")
    config["trainer"]["loss"] = loss
    return config


def run_variant(ref: ModuleType, variant: str, warm_start: Path, budget: Any, out: Path, url: str,
                measure: Any, before: dict[str, float]) -> AblationRun:
    from trainer_adapter.main_job_report import read_jsonl

    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "rl.json"
    config_path.write_text(json.dumps(run_config(ref, variant, warm_start, budget, out, url), indent=2))
    with (out / "rl.log").open("w") as log:
        subprocess.run([str(ROOT / ".venv" / "bin" / "vf-train"), "rl", str(config_path)], check=True,
                       stdout=log, stderr=subprocess.STDOUT)
    trainer = read_jsonl(out / "rl" / "trainer_metrics.jsonl")
    run = AblationRun(variant, budget.seed, before=before,
                      train_rewards=[m["reward"] for m in read_jsonl(out / "rl" / "orchestrator_metrics.jsonl")],
                      step_seconds=[m["time/step"] for m in trainer],
                      mismatch_kl_max=max(m["mismatch_kl"] for m in trainer),
                      masked_max=max(m["masked"] for m in trainer))
    run.after = measure(out / "rl" / "weights" / f"step_{budget.steps}")
    return run


def report(runs: list[AblationRun]) -> None:
    print(f"{'variant':16} {'seed':>4} {'held-out sampled':>17} {'greedy':>15} {'train first5->last5':>20} "
          f"{'KL max':>8} {'masked':>7} {'s/step':>6}")
    for r in runs:
        first, last = statistics.fmean(r.train_rewards[:5]), statistics.fmean(r.train_rewards[-5:])
        print(f"{r.variant:16} {r.seed:>4} {r.before['sampled']:.3f} -> {r.after['sampled']:.3f}  "
              f"{r.before['greedy']:.3f} -> {r.after['greedy']:.3f}  {first:.3f} -> {last:.3f}      "
              f"{r.mismatch_kl_max:8.4f} {r.masked_max:7.3f} {statistics.median(r.step_seconds):6.2f}")


def by_variant(runs: list[AblationRun]) -> dict[str, list[AblationRun]]:
    grouped: dict[str, list[AblationRun]] = {}
    for r in runs:
        grouped.setdefault(r.variant, []).append(r)
    return grouped


def summary(runs: list[AblationRun]) -> None:
    """Per variant, over its seeds: the mean held-out gain (sampled and greedy) with the seeds' spread."""
    print(f"\n{'variant':16} {'seeds':>5} {'sampled gain':>16} {'greedy gain':>16} {'sampled after':>14} "
          f"{'KL max':>8} {'masked':>7}")
    for variant, group in by_variant(runs).items():
        gains = [r.after["sampled"] - r.before["sampled"] for r in group]
        greedy = [r.after["greedy"] - r.before["greedy"] for r in group]
        spread = statistics.stdev if len(group) > 1 else (lambda _: 0.0)
        print(f"{variant:16} {len(group):>5} {statistics.fmean(gains):+7.3f} ± {spread(gains):.3f} "
              f"{statistics.fmean(greedy):+7.3f} ± {spread(greedy):.3f} "
              f"{statistics.fmean(r.after['sampled'] for r in group):14.3f} "
              f"{max(r.mismatch_kl_max for r in group):8.4f} {max(r.masked_max for r in group):7.3f}")


def plot(runs: list[AblationRun], path: Path) -> None:
    """One line per variant: the training reward per step, mean over its seeds, the seeds' range shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=120)
    for variant, group in by_variant(runs).items():
        steps = min(len(r.train_rewards) for r in group)
        curves = [r.train_rewards[:steps] for r in group]
        mean = [statistics.fmean(values) for values in zip(*curves)]
        gain = statistics.fmean(r.after["sampled"] - r.before["sampled"] for r in group)
        (line,) = axes.plot(range(1, steps + 1), mean, label=f"{variant}: held-out {gain:+.2f} (mean of {len(group)})")
        if len(group) > 1:
            axes.fill_between(range(1, steps + 1), [min(v) for v in zip(*curves)], [max(v) for v in zip(*curves)],
                              color=line.get_color(), alpha=0.12)
    axes.set_xlabel("RL step")
    axes.set_ylabel("training reward (sampled)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)


def parse_variants(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown variant(s) {unknown or text!r}; choose from {', '.join(VARIANTS)}")
    return names


def parse_seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are comma-separated integers, not {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-start", type=Path, required=True, help="SFT weights folder every run starts from.")
    parser.add_argument("--variants", type=parse_variants, default=list(VARIANTS), help="Comma-separated; default all.")
    parser.add_argument("--seeds", type=parse_seeds, default=[0], help="Comma-separated run seeds.")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--problems", type=int, default=32, help="Problems per step.")
    parser.add_argument("--rollouts", type=int, default=8, help="Samples per problem (the advantage's group).")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--eval-rows", type=int, default=200)
    parser.add_argument("--eval-samples", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench" / "loss_ablation")
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--vllm-python", type=Path, default=ROOT / ".venv-vllm" / "bin" / "python")
    args = parser.parse_args(argv)
    if not (args.warm_start / "config.json").is_file():
        parser.error(f"--warm-start {args.warm_start} is not a Hugging Face weights folder (no config.json)")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.train.launch import free_port

    ref = load_reference_bench()
    tokenizer = AutoTokenizer.from_pretrained(args.warm_start)
    runs: list[AblationRun] = []
    server = InferenceServer(InferenceConfig(model=str(args.warm_start), served_model_name=["tiny"], port=free_port(),
                                             max_num_seqs=512), python=args.vllm_python, log_path=args.out / "vllm.log",
                             die_with_parent=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with server.start(600):
        for seed in args.seeds:
            budget = ref.Budget(steps=args.steps, problems=args.problems, rollouts=args.rollouts, lr=args.lr,
                                warmup_steps=args.warmup_steps, temperature=1.0, max_tokens=8, seed=seed,
                                num_train_examples=5000)
            _, eval_rows, reward = ref.load_rows(budget, args.eval_rows)

            def measure(weights: Path, budget: Any = budget, eval_rows: Any = eval_rows, reward: Any = reward) -> Any:
                model = AutoModelForCausalLM.from_pretrained(weights, dtype=torch.float32)
                return ref.held_out(model, tokenizer, eval_rows, reward, budget, args.eval_samples, seed=1234)

            before = measure(args.warm_start)
            for variant in args.variants:
                started = time.perf_counter()
                runs.append(run_variant(ref, variant, args.warm_start, budget, args.out / f"seed{seed}" / variant,
                                        server.base_url, measure, before))
                print(f"{variant} seed {seed}: {time.perf_counter() - started:.0f} s", flush=True)
    report(runs)
    summary(runs)
    if args.png:
        plot(runs, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
