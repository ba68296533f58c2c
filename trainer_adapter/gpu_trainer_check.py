"""The trainer half of the GPU smoke run, for a GPU machine that has no GPU build of vLLM.

``scripts/gpu_smoke.sh`` needs vLLM for CUDA, which a machine without network cannot install and
which is too large to carry onto one. This check runs everything else of the main job at GPU scale
(``configs/main_job/gpu.toml``) on such a machine, with Hugging Face ``generate`` standing in for
vLLM as the rollout engine:

1. ``vf-train sft`` on the arithmetic environment's training rows: the FSDP2 trainer on NCCL,
   computing in bfloat16 (float32 weights, optimizer and gradient reduction);
2. greedy held-out accuracy of the SFT weights on the environment's evaluation rows;
3. synchronous RL: the RL trainer ranks (``trainer_adapter.train.rl`` under torchrun) wait for
   batches while this process loads each exported version in bfloat16, samples the step's groups
   (temperature 1, the sampled tokens' logprobs kept as the "inference" logprobs), scores them
   exactly as the environment does (the stripped reply equals the sum), and hands the trainer the
   batch through the run folder, packed by the orchestrator's own code;
4. greedy held-out accuracy after RL, and one summary block.

The mismatch KL the trainer logs is therefore ``generate`` in bfloat16 against the trainer's
bfloat16 forward, not vLLM's; generation speed is not vLLM's either and is not reported as such.

Two steps, because the GPU machine lacks the SDK's environment packages (and ``datasets``)::

    python -m trainer_adapter.gpu_trainer_check prepare OUT [--config configs/main_job/gpu.toml] [KEY=VALUE ...]
    python -m trainer_adapter.gpu_trainer_check run OUT      # on the GPU machine

``prepare`` (any machine with the SDK) writes the rows as JSONL and the phases' configs into OUT;
``run`` trains there and prints the summary (also ``OUT/summary.json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from trainer_adapter.config import load_config, parse_override
from trainer_adapter.lifeline import stop_process
from trainer_adapter.main_job_config import MainJobConfig
from trainer_adapter.main_job_phases import sft_run_config
from trainer_adapter.main_job_report import read_jsonl
from trainer_adapter.run_folder import numbered_steps
from verifiers.errors import UsageError

DEFAULT_CONFIG = Path("configs/main_job/gpu.toml")


# -- prepare: the data and configs, on a machine with the SDK --------------------------------------


def prepare(out: Path, config_path: Path, options: Sequence[str]) -> None:
    """Write ``train.jsonl``, ``eval.jsonl``, ``sft.json`` and ``check.json`` (the resolved job config) into ``out``."""
    import verifiers as vf

    if not config_path.is_file():
        raise UsageError(f"no main job config at {config_path}")
    config = load_config(MainJobConfig, config_path, dict(parse_override(o) for o in options))
    out.mkdir(parents=True, exist_ok=True)
    env = vf.load_environment(config.env_id, **config.all_env_args())
    train = env.get_dataset()
    held_out = env.get_eval_dataset()
    _write_rows(out / "train.jsonl", ({"prompt": r["prompt"], "completion": r["answer"]} for r in train))
    _write_rows(out / "eval.jsonl", ({"prompt": r["prompt"], "answer": r["answer"]} for r in held_out))
    sft = sft_run_config(config)
    sft["data"] = {"path": str(out / "train.jsonl"), "batch_size": config.sft.batch_size, "seed": config.seed}
    sft["output_dir"] = str(out / "sft")
    (out / "sft.json").write_text(json.dumps(sft, indent=2))
    (out / "check.json").write_text(config.model_dump_json(indent=2))
    print(f"prepared {out}: {len(train)} training rows, {len(held_out)} held-out rows")


def _write_rows(path: Path, rows: Any) -> None:
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


# -- run: on the GPU machine -----------------------------------------------------------------------


def run(out: Path) -> dict[str, Any]:
    """SFT, held-out accuracy, synchronous RL with ``generate`` as the rollout engine, held-out accuracy."""
    import torch

    if not (out / "check.json").is_file():
        raise UsageError(f"{out} holds no check.json: run `prepare {out}` first (on a machine with the SDK)")
    config = MainJobConfig.model_validate_json((out / "check.json").read_text())
    held_out = read_jsonl(out / "eval.jsonl")
    # the RL problems are the SFT rows, their completion being the sum (as the environment's training split is)
    train = [{"prompt": r["prompt"], "answer": r["completion"]}
             for r in read_jsonl(out / "train.jsonl")]
    times: dict[str, float] = {}

    clock = time.monotonic()
    _say(f"[1/4] SFT: up to {config.sft.steps} steps, batch {config.sft.batch_size}, {config.precision}")
    _run([sys.executable, "-m", "trainer_adapter.cli.vf_train", "sft", str(out / "sft.json")], out / "sft.log")
    sft_weights = out / "sft" / "weights" / f"step_{numbered_steps(out / 'sft' / 'weights', 'config.json')[-1]}"
    times["sft"] = time.monotonic() - clock

    _say("[2/4] held-out greedy accuracy of the SFT weights")
    before = _accuracy(sft_weights, held_out)
    _say(f"  {before:.3f} on {len(held_out)} rows")

    clock = time.monotonic()
    _say(f"[3/4] RL: {config.rl.steps} steps of {config.rl.batch_size} rollouts, generate() as the rollout engine")
    rl_weights, rewards, generate_s = _rl(config, out, sft_weights, train)
    times["rl"] = time.monotonic() - clock
    times["rl_generate"] = generate_s

    _say("[4/4] held-out greedy accuracy after RL")
    after = _accuracy(rl_weights, held_out)
    summary = {
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU)", "torch": torch.__version__,
        "sft": _sft_figures(out / "sft"), "rl": _rl_figures(out / "rl", rewards),
        "greedy_accuracy": {"sft": before, "rl": after}, "times_s": times,
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    _say(_summary_block(summary))
    return summary


def _say(text: str) -> None:
    print(text, flush=True)


def _run(command: list[str], log: Path) -> None:
    with log.open("w") as f:
        status = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    if status:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise SystemExit(f"{' '.join(command)} failed with status {status}; last lines of {log}:\n{tail}")


def _accuracy(weights: Path, rows: Sequence[dict[str, Any]]) -> float:
    from trainer_adapter.model.greedy import exact_match_rate

    return exact_match_rate(weights, [r["prompt"] for r in rows], [r["answer"] for r in rows], device=_device())


def _device() -> str:
    """The GPU; the CPU where there is none (the check's own tests run it there on a tiny shape)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _rl(config: MainJobConfig, out: Path, start: Path, rows: list[dict[str, Any]]) -> tuple[Path, list[float], float]:
    """Run the RL trainer ranks and feed them a batch per step; returns (last weights, reward per step, s sampling)."""
    import random

    from trainer_adapter.train.launch import rank_environment, torchrun_command

    root = out / "rl"
    trainer = {
        "model": {"path": str(start)}, "output_dir": str(root), "max_steps": config.rl.steps,
        "precision": config.precision, "threads_per_process": 4, "checkpoint": {"every": 0},
        "optimizer": {"lr": config.rl.lr, "warmup_steps": config.rl.warmup_steps, "schedule": "constant"},
    }  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (out / "rl_trainer.json").write_text(json.dumps(trainer, indent=2))
    command = torchrun_command("trainer_adapter.train.rl", [str(out / "rl_trainer.json")], nproc=1)
    log = (out / "rl_trainer.log").open("w")
    ranks = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=rank_environment())
    groups = config.rl.batch_size // config.rl.rollouts_per_example
    order = random.Random(config.seed)
    rewards: list[float] = []
    generating = 0.0
    weights = start
    try:
        for step in range(config.rl.steps):
            clock = time.monotonic()
            problems = order.sample(rows, groups)
            reward = _feed_step(root, step, weights, problems, config)
            generating += time.monotonic() - clock
            rewards.append(reward)
            weights = _wait_for_weights(root / "weights" / f"step_{step + 1}", ranks, out / "rl_trainer.log")
            _say(f"  rl step {step + 1}/{config.rl.steps}  reward {reward:.3f}")
        ranks.wait(timeout=120)  # the last step's metrics line is written after its weights
    finally:
        stop_process(ranks, grace=60)  # torchrun stops its ranks on SIGTERM
        log.close()
    return weights, rewards, generating


def _feed_step(root: Path, step: int, weights: Path, problems: list[dict[str, Any]], config: MainJobConfig) -> float:
    """Sample the step's groups from ``weights``, score them, write the packed batch; returns the mean reward."""
    from trainer_adapter.orchestrator.advantages import compute_advantages
    from trainer_adapter.orchestrator.packing import Sample, distribute, pack
    from trainer_adapter.transport import write_step

    n = config.rl.rollouts_per_example
    rows = [p for p in problems for _ in range(n)]
    prompt_ids, completions, logprobs, replies = _sample(weights, [r["prompt"] for r in rows], config.max_tokens,
                                                         config.rl.temperature)
    rewards = [float(reply.strip() == row["answer"]) for row, reply in zip(rows, replies)]
    samples = []
    for g in range(len(problems)):
        for i, advantage in zip(range(g * n, (g + 1) * n), compute_advantages(rewards[g * n : (g + 1) * n])):
            p, c = prompt_ids[i], completions[i]
            samples.append(Sample(token_ids=p + c, loss_mask=[False] * len(p) + [True] * len(c),
                                  inference_logprobs=[0.0] * len(p) + logprobs[i], advantage=advantage,
                                  policy_version=step, prompt_len=len(p)))
    write_step(root, step, distribute(pack(samples, 2048, config.rl.temperature), 1))
    return sum(rewards) / len(rewards)


def _sample(
    weights: Path, prompts: list[list[dict[str, Any]]], max_tokens: int, temperature: float
) -> tuple[list[list[int]], list[list[int]], list[list[float]], list[str]]:
    """Prompt ids, sampled completion ids (up to and with the end of turn), their logprobs and the reply texts."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = _device()
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    # transformers wraps Module.to with functools.wraps, whose typing keeps the unbound method's first parameter
    model = AutoModelForCausalLM.from_pretrained(weights, dtype=dtype).to(device).eval()  # type: ignore[arg-type]
    tokenizer = AutoTokenizer.from_pretrained(weights)
    tokenizer.padding_side = "left"
    texts = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in prompts]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    with torch.no_grad():
        out = model.generate(**batch, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                             max_new_tokens=max_tokens, eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id, output_logits=True, return_dict_in_generate=True)
    new = out.sequences[:, batch["input_ids"].shape[1] :]
    # the sampling distribution is softmax(logits / temperature) (no top-k/top-p): the tokens' logprobs under it
    steps = torch.stack(out.logits, dim=1).float() / temperature
    chosen = torch.log_softmax(steps, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    prompt_ids: list[list[int]] = []
    completions: list[list[int]] = []
    logprobs: list[list[float]] = []
    replies: list[str] = []
    for i in range(len(prompts)):
        ids = new[i].tolist()
        length = ids.index(tokenizer.eos_token_id) + 1 if tokenizer.eos_token_id in ids else len(ids)
        mask = batch["attention_mask"][i].bool()
        prompt_ids.append(batch["input_ids"][i][mask].tolist())
        completions.append(ids[:length])
        logprobs.append(chosen[i, :length].tolist())
        # one sequence decodes to one string (decode's annotation covers a batch's list of them too)
        replies.append(cast(str, tokenizer.decode(ids[:length], skip_special_tokens=True)))
    return prompt_ids, completions, logprobs, replies


def _wait_for_weights(path: Path, ranks: subprocess.Popen[bytes], log: Path, timeout_s: float = 600.0) -> Path:
    deadline = time.monotonic() + timeout_s
    while not (path / "config.json").is_file():
        if ranks.poll() is not None:
            tail = "\n".join(log.read_text().splitlines()[-40:])
            raise SystemExit(f"the RL trainer exited with status {ranks.returncode}; last lines of {log}:\n{tail}")
        if time.monotonic() > deadline:
            raise SystemExit(f"no weights at {path} after {timeout_s:.0f} s")
        time.sleep(0.05)
    return path


def _sft_figures(folder: Path) -> dict[str, Any]:
    lines = read_jsonl(folder / "metrics.jsonl")
    times = sorted(m["step_time_s"] for m in lines)
    return {"steps": lines[-1]["step"] if lines else 0, "final_loss": lines[-1]["loss"] if lines else None,
            "stopped_at_loss": lines[-1].get("stopped_at_loss") if lines else None,
            "median_step_s": times[len(times) // 2] if times else None,
            "losses": {m["step"]: round(m["loss"], 4) for m in lines}}  # fmt: skip


def _rl_figures(folder: Path, rewards: list[float]) -> dict[str, Any]:
    lines = read_jsonl(folder / "trainer_metrics.jsonl")

    def median(key: str) -> float | None:
        values = sorted(m[key] for m in lines if key in m)
        return values[len(values) // 2] if values else None

    return {"steps": len(lines), "reward_per_step": [round(r, 4) for r in rewards],
            "mismatch_kl": [m.get("mismatch_kl") for m in lines],
            "median_trainer_step_s": median("time/step"), "median_export_s": median("time/export"),
            "median_tokens": median("tokens")}  # fmt: skip


def _summary_block(summary: dict[str, Any]) -> str:
    sft, rl, acc, times = summary["sft"], summary["rl"], summary["greedy_accuracy"], summary["times_s"]
    rewards = rl["reward_per_step"]
    lines = [
        "== gpu_trainer_check summary",
        f"gpu {summary['gpu']} | torch {summary['torch']}",
        f"sft: {sft['steps']} steps, final loss {sft['final_loss']}, stopped at loss {sft['stopped_at_loss']}, "
        f"median step {sft['median_step_s']} s, {times['sft']:.0f} s with start-up",
        f"rl: {rl['steps']} trainer steps, reward {rewards[0] if rewards else None} -> "
        f"{rewards[-1] if rewards else None}, median trainer step {rl['median_trainer_step_s']} s "
        f"(export {rl['median_export_s']} s), {rl['median_tokens']} positions/step, "
        f"{times['rl']:.0f} s in all ({times['rl_generate']:.0f} s loading and sampling)",
        f"mismatch KL (generate bf16 vs trainer bf16): {rl['mismatch_kl']}",
        f"held-out greedy accuracy: {acc['sft']:.3f} -> {acc['rl']:.3f}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trainer_adapter.gpu_trainer_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="write the data and configs (a machine with the SDK)")
    p.add_argument("out", type=Path, help="folder for the data, configs and the run")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="the main job config (default: %(default)s)")
    p.add_argument("options", nargs="*", help="KEY=VALUE overrides of the config, e.g. rl.steps=10")
    r = sub.add_parser("run", help="train and measure (the GPU machine)")
    r.add_argument("out", type=Path, help="the folder prepare wrote")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            prepare(args.out, args.config, args.options)
        else:
            run(args.out)
    except UsageError as e:
        print(f"gpu_trainer_check: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()


__all__ = ["main", "prepare", "run"]
