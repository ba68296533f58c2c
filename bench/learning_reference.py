"""How much the full RL stack learns per rollout, against textbook on-policy policy gradient in one process.

Both start from the same warm start (an SFT weights folder of the tiny model), train on the same
environment (``arithmetic``: the main job's), with the same rollout budget (``--problems`` problems ×
``--rollouts`` samples a step, ``--steps`` steps) and learning rate, and are measured the same way:
the held-out reward on the environment's eval split (never trained on), ``--eval-samples`` replies per
row sampled at the training temperature, plus greedy accuracy, both computed in this process from the
final weights folder.

* ``reference``: one process, no server. Each step samples every reply with the model itself (a
  KV-cached sampling loop), scores them with the environment's own reward function, sets
  advantage = reward − group mean, and takes one AdamW step on
  ``−Σ_tokens A · log π(token) / (trainable tokens)``: on-policy, so there is no importance ratio.
* ``stack``: ``vf-train rl`` — vLLM on CPU with in-flight weight updates, the orchestrator, the
  FSDP2 trainer under torchrun — with the same settings, on a server started once (not timed).

Prints, per run: held-out reward before → after (sampled and greedy), training reward of the first
and last five steps, seconds per step (median), and the ratio stack/reference; ``--png`` draws
both training-reward curves in one figure.

    .venv/bin/python bench/learning_reference.py --warm-start outputs/main_job/sft/weights/step_*   # the main job's
    .venv/bin/python bench/learning_reference.py --warm-start DIR --only reference --steps 100
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "arithmetic"


@dataclass(frozen=True)
class Budget:
    """What both runs get: the same problems, samples, steps and step size."""

    steps: int
    problems: int
    rollouts: int
    lr: float
    warmup_steps: int
    temperature: float
    max_tokens: int
    seed: int
    num_train_examples: int
    std_normalize: bool = False


@dataclass
class RunResult:
    name: str
    train_rewards: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


# -- the environment, as plain rows ----------------------------------------------------------------


def load_rows(budget: Budget, num_eval: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """``(train rows, eval rows, reward function)`` of the environment the main job trains on."""
    import verifiers as vf

    env = vf.load_environment(ENV_ID, num_train_examples=budget.num_train_examples, num_eval_examples=num_eval)
    funcs = env.rubric.funcs
    parser = env.parser

    def reward(reply: str, answer: str) -> float:
        return float(funcs[0](completion=[{"role": "assistant", "content": reply}], answer=answer, parser=parser))

    return list(env.get_dataset()), list(env.get_eval_dataset()), reward


def prompt_ids(tokenizer: PreTrainedTokenizerBase, row: dict[str, Any]) -> list[int]:
    messages = row["prompt"]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False))


# -- sampling in-process ---------------------------------------------------------------------------


@torch.no_grad()
def sample(model: PreTrainedModel, prompts: list[list[int]], temperature: float, max_tokens: int, eos: int,
           generator: torch.Generator) -> list[list[int]]:
    """One reply per prompt (token ids, the end-of-turn token included when sampled); 0 = greedy.

    Prompts are left-padded so every row's next token is at the same column; position ids skip
    the padding, so each reply is what the model gives its prompt alone.
    """
    longest = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), longest), eos, dtype=torch.long)
    mask = torch.zeros((len(prompts), longest), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, longest - len(p):] = torch.tensor(p)
        mask[i, longest - len(p):] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
    cache, logits = out.past_key_values, out.logits[:, -1]
    replies: list[list[int]] = [[] for _ in prompts]
    done = torch.zeros(len(prompts), dtype=torch.bool)
    for _ in range(max_tokens):
        if temperature == 0:
            token = logits.argmax(-1)
        else:
            probs = torch.softmax(logits.float() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        for i in (~done).nonzero().flatten().tolist():
            replies[i].append(int(token[i]))
        done |= token == eos
        if bool(done.all()):
            break
        mask = torch.cat([mask, torch.ones(len(prompts), 1, dtype=torch.long)], dim=1)
        positions = positions[:, -1:] + 1
        out = model(input_ids=token[:, None], attention_mask=mask, position_ids=positions, past_key_values=cache,
                    use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
    return replies


def decode(tokenizer: PreTrainedTokenizerBase, reply: list[int]) -> str:
    return tokenizer.decode(reply, skip_special_tokens=True)


def held_out(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, rows: list[dict[str, Any]], reward: Any,
             budget: Budget, samples: int, seed: int) -> dict[str, float]:
    """Held-out reward: sampled at the training temperature (``samples`` per row) and greedy."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    prompts = [prompt_ids(tokenizer, r) for r in rows]
    eos = tokenizer.eos_token_id
    sampled = sample(model, [p for p in prompts for _ in range(samples)], budget.temperature, budget.max_tokens,
                     eos, generator)
    answers = [r["answer"] for r in rows for _ in range(samples)]
    greedy = sample(model, prompts, 0.0, budget.max_tokens, eos, generator)
    model.train()
    return {
        "sampled": statistics.fmean(reward(decode(tokenizer, s), a) for s, a in zip(sampled, answers)),
        "greedy": statistics.fmean(reward(decode(tokenizer, g), r["answer"]) for g, r in zip(greedy, rows)),
    }


# -- the reference: textbook on-policy policy gradient ---------------------------------------------


def advantages(rewards: list[float], std_normalize: bool) -> list[float]:
    mean = statistics.fmean(rewards)
    centred = [r - mean for r in rewards]
    if not std_normalize:
        return centred
    std = statistics.pstdev(rewards)
    return [c / (std + 1e-6) for c in centred]


def reference_step(model: PreTrainedModel, optimizer: torch.optim.Optimizer, prompts: list[list[int]],
                   replies: list[list[int]], adv: list[float]) -> None:
    """One AdamW step on −Σ A·log π / (trainable tokens) over right-padded prompt+reply rows."""
    rows = [p + r for p, r in zip(prompts, replies)]
    longest = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), longest), dtype=torch.long)
    trainable = torch.zeros((len(rows), longest), dtype=torch.bool)
    weight = torch.zeros((len(rows), longest))
    for i, (p, r) in enumerate(zip(prompts, replies)):
        ids[i, : len(p) + len(r)] = torch.tensor(p + r)
        trainable[i, len(p): len(p) + len(r)] = True
        weight[i] = adv[i]
    real = torch.arange(longest)[None, :] < torch.tensor([len(r) for r in rows])[:, None]
    logits = model(input_ids=ids, attention_mask=real.long()).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    mask = trainable[:, 1:]
    loss = -(logp * weight[:, 1:])[mask].sum() / max(int(mask.sum()), 1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def run_reference(warm_start: Path, budget: Budget, eval_rows: list[dict[str, Any]], train_rows: list[dict[str, Any]],
                  reward: Any, eval_samples: int, out: Path, freeze_embeddings: bool = False) -> RunResult:
    torch.manual_seed(budget.seed)
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(warm_start, dtype=torch.float32, attn_implementation="sdpa")
    tokenizer = AutoTokenizer.from_pretrained(warm_start)
    model.train()
    if freeze_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=budget.lr, betas=(0.9, 0.95),
                                  weight_decay=0.0)
    result = RunResult("reference")
    result.before = held_out(model, tokenizer, eval_rows, reward, budget, eval_samples, seed=1234)
    order = random.Random(budget.seed)
    generator = torch.Generator().manual_seed(budget.seed)
    eos = tokenizer.eos_token_id
    for step in range(budget.steps):
        started = time.perf_counter()
        problems = order.sample(train_rows, budget.problems)
        prompts = [prompt_ids(tokenizer, r) for r in problems for _ in range(budget.rollouts)]
        model.eval()
        replies = sample(model, prompts, budget.temperature, budget.max_tokens, eos, generator)
        model.train()
        rewards = [reward(decode(tokenizer, rep), r["answer"])
                   for rep, r in zip(replies, (r for r in problems for _ in range(budget.rollouts)))]
        adv: list[float] = []
        for g in range(budget.problems):
            adv += advantages(rewards[g * budget.rollouts:(g + 1) * budget.rollouts], budget.std_normalize)
        lr = budget.lr * min(1.0, (step + 1) / max(budget.warmup_steps, 1))
        for group in optimizer.param_groups:
            group["lr"] = lr
        reference_step(model, optimizer, prompts, replies, adv)
        result.step_seconds.append(time.perf_counter() - started)
        result.train_rewards.append(statistics.fmean(rewards))
        print(f"  reference step {step + 1}/{budget.steps}  reward {result.train_rewards[-1]:.3f}", flush=True)
    result.after = held_out(model, tokenizer, eval_rows, reward, budget, eval_samples, seed=1234)
    model.save_pretrained(out / "reference_weights")
    return result


# -- the stack: vf-train rl ------------------------------------------------------------------------


def stack_config(warm_start: Path, budget: Budget, out: Path, server_url: str,
                 overrides: dict[str, Any]) -> dict[str, Any]:
    """``vf-train rl``'s config for the same budget (the main job's, apart from the budget's fields)."""
    from trainer_adapter.main_job_config import MainJobConfig
    from trainer_adapter.main_job_phases import rl_run_config

    job = MainJobConfig.model_validate({
        "output_dir": str(out), "seed": budget.seed, "num_train_examples": budget.num_train_examples,
        "max_tokens": budget.max_tokens,
        "rl": {"steps": budget.steps, "lr": budget.lr, "warmup_steps": budget.warmup_steps,
               "batch_size": budget.problems * budget.rollouts, "rollouts_per_example": budget.rollouts,
               "temperature": budget.temperature},
    })
    config = rl_run_config(job, warm_start, server_url)
    config["output_dir"] = str(out / "stack")
    config["orchestrator"].update(overrides)
    return config


def run_stack(warm_start: Path, budget: Budget, eval_rows: list[dict[str, Any]], reward: Any, eval_samples: int,
              out: Path, vllm_python: Path, overrides: dict[str, Any]) -> RunResult:
    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.main_job_report import read_jsonl
    from trainer_adapter.train.launch import free_port

    server = InferenceServer(InferenceConfig(model=str(warm_start), served_model_name=["tiny"], port=free_port(),
                                             max_num_seqs=512), python=vllm_python, log_path=out / "vllm.log",
                             die_with_parent=True)
    result = RunResult("stack")
    model = AutoModelForCausalLM.from_pretrained(warm_start, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(warm_start)
    result.before = held_out(model, tokenizer, eval_rows, reward, budget, eval_samples, seed=1234)
    try:
        server.start(600)
        config_path = out / "stack.json"
        config_path.write_text(json.dumps(stack_config(warm_start, budget, out, server.base_url, overrides), indent=2))
        started = time.perf_counter()
        subprocess.run([str(ROOT / ".venv" / "bin" / "vf-train"), "rl", str(config_path)], check=True,
                       stdout=(out / "stack.log").open("w"), stderr=subprocess.STDOUT)
        result.extra["wall_s"] = time.perf_counter() - started
    finally:
        server.stop()
    rl = out / "stack"
    result.train_rewards = [m["reward"] for m in read_jsonl(rl / "orchestrator_metrics.jsonl")]
    trainer = read_jsonl(rl / "trainer_metrics.jsonl")
    result.step_seconds = [m["time/step"] for m in trainer]
    result.extra["mismatch_kl_max"] = max(m["mismatch_kl"] for m in trainer)
    result.extra["masked_max"] = max(m["masked"] for m in trainer)
    final = AutoModelForCausalLM.from_pretrained(rl / "weights" / f"step_{budget.steps}", dtype=torch.float32)
    result.after = held_out(final, tokenizer, eval_rows, reward, budget, eval_samples, seed=1234)
    return result


# -- report ----------------------------------------------------------------------------------------


def report(results: list[RunResult]) -> None:
    print(f"{'run':10} {'held-out sampled':>18} {'greedy':>14} {'train first5->last5':>22} {'s/step':>7}")
    for r in results:
        first, last = statistics.fmean(r.train_rewards[:5]), statistics.fmean(r.train_rewards[-5:])
        print(f"{r.name:10} {r.before['sampled']:.3f} -> {r.after['sampled']:.3f}   "
              f"{r.before['greedy']:.3f} -> {r.after['greedy']:.3f}   {first:.3f} -> {last:.3f}        "
              f"{statistics.median(r.step_seconds):.2f}  {r.extra}")
    if len(results) == 2:
        ref, stack = results
        print(f"stack/reference seconds per step: "
              f"{statistics.median(stack.step_seconds) / statistics.median(ref.step_seconds):.2f}x")


def plot(results: list[RunResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4), dpi=120)
    for r in results:
        axes.plot(range(len(r.train_rewards)), r.train_rewards,
                  label=f"{r.name}: held-out {r.before['sampled']:.2f} -> {r.after['sampled']:.2f}")
    axes.set_xlabel("RL step")
    axes.set_ylabel("training reward (sampled)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-start", type=Path, required=True, help="SFT weights folder both runs start from.")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--problems", type=int, default=64, help="Problems per step.")
    parser.add_argument("--rollouts", type=int, default=8, help="Samples per problem (the advantage's group).")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--std-normalize", action="store_true", help="Divide advantages by the group's std.")
    parser.add_argument("--freeze-embeddings", action="store_true",
                        help="Reference only: keep the (tied) embedding fixed.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rows", type=int, default=200)
    parser.add_argument("--eval-samples", type=int, default=8)
    parser.add_argument("--only", choices=["reference", "stack"], default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench" / "learning_reference")
    parser.add_argument("--orchestrator", default="{}", help="Stack only: JSON of orchestrator settings to override.")
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--vllm-python", type=Path, default=ROOT / ".venv-vllm" / "bin" / "python")
    args = parser.parse_args(argv)
    budget = Budget(steps=args.steps, problems=args.problems, rollouts=args.rollouts, lr=args.lr,
                    warmup_steps=args.warmup_steps, temperature=args.temperature, max_tokens=8, seed=args.seed,
                    num_train_examples=5000, std_normalize=args.std_normalize)
    args.out.mkdir(parents=True, exist_ok=True)
    train_rows, eval_rows, reward = load_rows(budget, args.eval_rows)
    results = []
    if args.only in (None, "reference"):
        results.append(run_reference(args.warm_start, budget, eval_rows, train_rows, reward, args.eval_samples,
                                     args.out, args.freeze_embeddings))
    if args.only in (None, "stack"):
        results.append(run_stack(args.warm_start, budget, eval_rows, reward, args.eval_samples, args.out,
                                 args.vllm_python, json.loads(args.orchestrator)))
    report(results)
    if args.png:
        plot(results, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
