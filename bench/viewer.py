"""Results viewer benchmark: ``vf-tui`` opening big runs, this SDK against the original's last ``vf-tui``.

verifiers 0.3.0's ``vf-tui`` (``.venv-vf030``) loads nothing: it prints that it is deprecated in favour of
``prime eval view`` (a separate CLI), and the bench prints what it says. The original viewer that does load runs
is 0.1.5's (``.venv-vf015``, ``verifiers/scripts/tui.py``): it reads the whole ``results.jsonl`` into a list of
dicts when a run is opened. Ours indexes a few fields per line, up to ``Limits.max_rows`` lines, and reads one
record again when it is shown (``verifiers/viewer/rollouts.py``).

Each size gets one run folder written the way ``vf-eval`` writes it (``state_to_output`` records through
``ResultsWriter``; tool-use rollouts of about 4 KB: a system and a user message, three assistant turns with a tool
call and its result, a final answer; groups of 4 in shuffled example order; 2 % errored). Both viewers run
their real Textual app headless (``App.run_test``, Textual 8.2.8 in both venvs), each in a worker process with
its own venv's python, started outside the repo. The worker measures:

* ``first screen``: from the worker's start (before the viewer's imports) to the run list shown;
* ``open``: loading the run as the run list's Enter does (ours: ``RolloutsScreen(run)``; 0.1.5:
  ``ViewRunScreen(run)``) until that screen is shown;
* ``deep``: showing the deepest rollout it can (ours: Enter on the row of the last line it listed; 0.1.5: Left
  from the first record, which wraps to the last one); the worker checks that rollout's answer is on screen;
* peak RSS (``VmHWM`` in ``/proc/self/status``) at the first screen and at the end.

SDKs alternate run by run; figures are medians of ``--repeats`` runs, ratios the median of paired runs::

    .venv/bin/python bench/viewer.py                          # 1k, 10k, 100k rollouts, 3 repeats (3-6 min)
    .venv/bin/python bench/viewer.py --sizes 1000 --repeats 1 # smoke run, ~15 s

Internally ``python bench/viewer.py worker ...`` is the worker (one ``RESULT {json}`` line on stdout).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = {"ours": ROOT / ".venv" / "bin" / "python", "original": ROOT / ".venv-vf015" / "bin" / "python"}
VF030_PYTHON = ROOT / ".venv-vf030" / "bin" / "python"
SDKS = ("ours", "original")
SIZE = (140, 45)
ROLLOUTS_PER_EXAMPLE = 4
TOOL_TURNS = 3


def answer_marker(line: int) -> str:
    """Text only the rollout on ``line`` of the file holds, so a worker can check it shows the right one."""
    return f"so the answer written on line {line} is final"


# -- the run folder (driver, this SDK's python) ---------------------------------------------------


def write_run(outputs: Path, rollouts: int, seed: int = 0) -> Path:
    """``outputs/evals/bench--scripted/run0`` with ``rollouts`` tool-use rollouts and its ``metadata.json``."""
    from verifiers.eval.metadata import summarize
    from verifiers.eval.results import ResultsWriter

    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(3000)]
    paragraphs = [" ".join(rng.choices(words, k=rng.randint(12, 48))) + "." for _ in range(512)]
    examples = list(range(-(-rollouts // ROLLOUTS_PER_EXAMPLE)))
    rng.shuffle(examples)  # vf-eval appends groups in the order they finish, not by example
    run_dir = outputs / "evals" / "bench--scripted" / "run0"
    scores: list[dict[str, Any]] = []  # what summarize reads, without the transcripts
    line = 0
    with ResultsWriter(run_dir / "results.jsonl") as writer:
        for example in examples:
            group = []
            for index in range(min(ROLLOUTS_PER_EXAMPLE, rollouts - line)):
                line += 1
                group.append(_rollout(rng, paragraphs, example, index, line))
            writer.append_group(group)
            scores += [{k: o[k] for k in ("example_id", "task", "reward", "metrics", "error")} for o in group]
    metadata = {"env_id": "bench", "model": "scripted", "num_examples": len(examples),
                "rollouts_per_example": ROLLOUTS_PER_EXAMPLE, "sampling_args": {"max_tokens": 512},
                "date": "2026-12-01T12:00:00+00:00", "status": "complete", **summarize(scores, 0.5)}
    (run_dir / "metadata.json").write_text(json.dumps(metadata, indent=2))
    return run_dir


def _rollout(rng: random.Random, paragraphs: list[str], example: int, index: int, line: int) -> dict[str, Any]:
    from verifiers.eval.outputs import state_to_output
    from verifiers.state import State

    def text(count: int) -> str:
        return " ".join(rng.choices(paragraphs, k=count))

    completion: list[dict[str, Any]] = []
    for turn in range(TOOL_TURNS):
        call_id = f"call_{line}_{turn}"
        arguments = json.dumps({"query": text(1)[:80]})
        completion += [
            {"role": "assistant", "content": text(1), "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "search", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": call_id, "content": text(2)},
        ]
    completion.append({"role": "assistant", "content": f"{text(1)} {answer_marker(line)}"})
    reward = float(rng.random() < 0.6)
    state = State(
        example_id=example, task="default", answer=str(example), info={"source": "bench", "seed": example},
        prompt=[{"role": "system", "content": text(1)}, {"role": "user", "content": text(1)}],
        completion=completion, reward=reward, metrics={"correct": reward, "num_tool_calls": float(TOOL_TURNS)},
        error="ModelError: 503 Service Unavailable (after 3 attempts)" if rng.random() < 0.02 else None,
        trajectory=[{}] * (TOOL_TURNS + 1), stop_condition="no_tools", total_completion_tokens=rng.randint(300, 900),
        timing={"generation_ms": rng.uniform(500, 9000), "scoring_ms": rng.uniform(1, 20)},
    )
    return state_to_output(state, index)


# -- worker (runs under either SDK's python) ------------------------------------------------------


def _peak_rss_mib() -> float:
    """This process's peak RSS (``VmHWM``). Not ``getrusage``: Linux carries ``ru_maxrss`` over ``exec``, so a
    worker would report the driver's peak (hundreds of MB after writing a big run) when its own is lower."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


async def _until_shown(pilot: Any, screen_type: type) -> None:
    """Until ``screen_type`` is the active screen and it and its widgets have handled every pending event."""
    while not isinstance(pilot.app.screen, screen_type):
        await pilot.pause()
    await pilot.pause()


async def _drive_ours(outputs: Path, started: float, max_rows: int | None) -> dict[str, Any]:
    from textual.widgets import DataTable, Static

    from verifiers.viewer.app import ViewerApp
    from verifiers.viewer.rollouts import Limits
    from verifiers.viewer.runs import discover_runs
    from verifiers.viewer.screens import RolloutsScreen, RunsScreen, TranscriptScreen

    limits = Limits() if max_rows is None else Limits(max_rows=max_rows, max_bytes=2**62)
    discovery = discover_runs(outputs)
    if not discovery.runs:
        raise SystemExit(f"no run under {outputs}")
    app = ViewerApp(discovery, outputs)  # what verifiers/cli/vf_tui.py starts
    async with app.run_test(size=SIZE) as pilot:
        await _until_shown(pilot, RunsScreen)
        figures = {"first_screen_s": time.perf_counter() - started, "rss_first_mib": _peak_rss_mib()}
        start = time.perf_counter()
        screen = RolloutsScreen(app.discovery.runs[0], limits)  # the run list's Enter (with the limits) reads
        figures["read_s"] = time.perf_counter() - start  # the index here, then shows the screen
        app.push_screen(screen)
        await _until_shown(pilot, RolloutsScreen)
        figures["open_s"] = time.perf_counter() - start
        deepest = max(range(len(screen.shown)), key=lambda number: screen.shown[number].line)
        deep_line = screen.shown[deepest].line
        screen.query_one("#rollouts", DataTable).move_cursor(row=deepest)
        await pilot.pause()
        start = time.perf_counter()
        await pilot.press("enter")
        await _until_shown(pilot, TranscriptScreen)
        figures["deep_ms"] = (time.perf_counter() - start) * 1000
        shown = "\n".join(str(widget.render()) for widget in app.screen.query(Static))
        return {**figures, "rows": len(screen.index.rows), "deep_line": deep_line,
                "deep_checked": answer_marker(deep_line) in shown}


async def _drive_original(outputs: Path, started: float) -> dict[str, Any]:
    from textual.widgets import Static

    from verifiers.scripts.tui import SelectEnvScreen, VerifiersTUI, ViewRunScreen

    app = VerifiersTUI(env_dir_path=str(outputs / "no-environments"), outputs_dir_path=str(outputs))
    runs = app.index.get("bench", {}).get("scripted")
    if not runs:
        raise SystemExit(f"no run under {outputs}")
    async with app.run_test(size=SIZE) as pilot:
        await _until_shown(pilot, SelectEnvScreen)
        figures = {"first_screen_s": time.perf_counter() - started, "rss_first_mib": _peak_rss_mib()}
        run = runs[0]
        start = time.perf_counter()
        screen = ViewRunScreen(run)  # the run list's Enter reads every record here, then shows the screen
        figures["read_s"] = time.perf_counter() - start
        app.push_screen(screen)
        await _until_shown(pilot, ViewRunScreen)
        figures["open_s"] = time.perf_counter() - start
        start = time.perf_counter()
        await pilot.press("left")  # from the first record to the last: the deepest in one key
        await pilot.pause()
        figures["deep_ms"] = (time.perf_counter() - start) * 1000
        deep_line = screen.current_record_idx + 1  # 0.1.5 keeps every record, in file order
        shown = str(screen.query_one("#completion-content", Static).render())
        return {**figures, "rows": len(screen.records), "deep_line": deep_line,
                "deep_checked": answer_marker(deep_line) in shown}


def worker_main(argv: list[str], started: float) -> None:
    import asyncio

    parser = argparse.ArgumentParser(prog="viewer.py worker")
    parser.add_argument("--sdk", choices=SDKS, required=True)
    parser.add_argument("--outputs", type=Path, required=True)
    parser.add_argument("--max-rows", type=int)
    args = parser.parse_args(argv)
    if args.sdk == "ours":
        figures = asyncio.run(_drive_ours(args.outputs, started, args.max_rows))
    else:
        figures = asyncio.run(_drive_original(args.outputs, started))
    print("RESULT " + json.dumps({**figures, "peak_rss_mib": _peak_rss_mib()}), flush=True)


# -- driver ---------------------------------------------------------------------------------------


def run_worker(sdk: str, outputs: Path, max_rows: int | None, timeout_s: float) -> dict[str, Any]:
    command = [str(PYTHONS[sdk]), "-I", __file__, "worker", "--sdk", sdk, "--outputs", str(outputs)]
    if sdk == "ours" and max_rows is not None:
        command += ["--max-rows", str(max_rows)]
    # cwd outside the repo: the original's python must never see this repo's `verifiers` package.
    done = subprocess.run(command, cwd="/", capture_output=True, text=True, timeout=timeout_s)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not results:
        raise RuntimeError(f"{sdk} worker failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(results[-1].removeprefix("RESULT "))
    if not result["deep_checked"]:
        raise RuntimeError(f"{sdk}: the rollout of line {result['deep_line']} was not the one on screen")
    return result


def original_030_says() -> str:
    """What verifiers 0.3.0's ``vf-tui`` does when run: its whole output."""
    done = subprocess.run([str(VF030_PYTHON), "-I", "-c", "from verifiers.scripts.tui import main; main()"],
                          cwd="/", capture_output=True, text=True, timeout=300)
    return (done.stdout + done.stderr).strip() or f"(nothing; exit {done.returncode})"


def measure(size: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every run of both viewers on a run folder of ``size`` rollouts, and their medians."""
    outputs = work / f"rollouts-{size}"
    start = time.perf_counter()
    run_dir = write_run(outputs, size)
    megabytes = (run_dir / "results.jsonl").stat().st_size / 1e6
    print(f"{size:,} rollouts: {megabytes:,.0f} MB written in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    runs: dict[str, list[dict[str, Any]]] = {sdk: [] for sdk in SDKS}
    for repeat in range(args.repeats):
        for sdk in SDKS if repeat % 2 == 0 else SDKS[::-1]:  # alternate who runs first
            result = run_worker(sdk, outputs, args.max_rows, args.timeout)
            runs[sdk].append(result)
            print(f"  {sdk:<9} #{repeat}: first screen {result['first_screen_s']:.2f} s, "
                  f"read {result['read_s']:.2f} s, open {result['open_s']:.2f} s, deep {result['deep_ms']:.0f} ms, "
                  f"peak {result['peak_rss_mib']:.0f} MiB", file=sys.stderr)
    keys = ("first_screen_s", "read_s", "open_s", "deep_ms", "rss_first_mib", "peak_rss_mib", "rows", "deep_line")
    medians = {sdk: {key: statistics.median(r[key] for r in rs) for key in keys} for sdk, rs in runs.items()}
    ratios = {key: statistics.median(b[key] / a[key] for a, b in zip(runs["ours"], runs["original"]))
              for key in ("first_screen_s", "read_s", "open_s", "deep_ms", "peak_rss_mib")}
    shutil.rmtree(outputs, ignore_errors=True)  # hundreds of MB at 100k: not kept until the end
    return {"size": size, "megabytes": megabytes, "runs": runs, "medians": medians, "original_over_ours": ratios}


def report(rows: list[dict[str, Any]], repeats: int) -> str:
    lines = [f"medians of {repeats} runs; ratio = original / ours, the median of paired runs",
             "| rollouts | results.jsonl | viewer | first screen (s) | open run (s) | of which reading (s) "
             "| deepest rollout (ms) | peak RSS (MiB) | rows listed | deepest line shown |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        for sdk, label in (("ours", "ours"), ("original", "0.1.5")):
            m = row["medians"][sdk]
            lines.append(f"| {row['size']:,} | {row['megabytes']:,.0f} MB | {label} | {m['first_screen_s']:.2f} | "
                         f"{m['open_s']:.2f} | {m['read_s']:.2f} | {m['deep_ms']:.0f} | {m['peak_rss_mib']:,.0f} | "
                         f"{m['rows']:,.0f} | {m['deep_line']:,.0f} |")
        r = row["original_over_ours"]
        lines.append(f"| | | ratio | {r['first_screen_s']:.1f}× | {r['open_s']:.1f}× | {r['read_s']:.1f}× | "
                     f"{r['deep_ms']:.1f}× | {r['peak_rss_mib']:.1f}× | | |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000], help="rollouts per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per viewer and size (the median is shown)")
    parser.add_argument("--max-rows", type=int, help="ours: index up to this many lines (default: the viewer's "
                                                     "own limit, as vf-tui users get it)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per worker run")
    parser.add_argument("--json", type=Path, help="save every run and the medians here")
    args = parser.parse_args(argv)
    if min(args.sizes) < 1 or args.repeats < 1 or (args.max_rows is not None and args.max_rows < 1):
        parser.error("--sizes, --repeats and --max-rows must be at least 1")
    for sdk, python in PYTHONS.items():
        if not python.exists():
            print(f"missing {sdk} python at {python} (see scripts/original_venv.sh)", file=sys.stderr)
            return 2
    if VF030_PYTHON.exists():
        print(f"verifiers 0.3.0's vf-tui says: {original_030_says()!r}")
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as work:
        try:
            rows = [measure(size, args, Path(work)) for size in args.sizes]
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"FAILED: {error}", file=sys.stderr)
            return 1
    if args.json:
        args.json.write_text(json.dumps({"argv": argv, "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1))
    print(report(rows, args.repeats))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker_main(sys.argv[2:], time.perf_counter())
    else:
        raise SystemExit(main(sys.argv[1:]))
