"""The program a check sandbox runs (``python3 inside.py REQUEST.json``): it is copied into the sandbox as a
file and never imported by the Hub. It imports the SDK and the uploaded environment, which only ever run
inside the sandbox.

Two processes, because the package must not be able to write the check's report. The *supervisor* (this
program as started) reads the request, removes it from the disk, keeps the worker's nonce in its memory only,
makes itself undumpable (so a process of the same user cannot read its memory or open its file descriptors
through ``/proc``), serves the scripted model on the sandbox's loopback and counts what it is asked, and runs
the *child* (``inside.py --child``), which imports the package, with its output piped back and no other file
descriptor. The child reports on its last line of output; the supervisor then prints the one line the worker
reads: that report, checked against what the supervisor saw (a report of rollouts the model was never asked
for is refused), with the nonce. A package that prints a report of its own and exits gets neither past.

``{"mode": "contract"}``: load the environment and run a few rollouts against the SDK's scripted
OpenAI-compatible server. ``{"mode": "rescore"}``: score the given rollouts again with the environment's own
rubric.

An environment that runs its rollouts in sandboxes of its own (a ``SandboxEnv``: ``CodeEnv``, ``PythonEnv``,
or a group holding one) is loaded but not run: sandboxes cannot start inside this one, so its rollouts and
its rubric (which runs the model's code there) could only fail here, through no fault of the package. The
report names the class instead (``needs_sandboxes``) for the worker to record as not checked.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
import traceback
from typing import Any

JUDGE_CLASSES = ("JudgeRubric",)  # rubrics that ask a model: their scores cannot be reproduced here
TAIL = 4000


def _number(value: Any) -> Any:
    """A reward as JSON can carry it: finite numbers as they are, anything else as its text ("nan")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else repr(float(value))
    return repr(value)


def _rubrics(rubric: Any) -> list[Any]:
    members = getattr(rubric, "rubrics", None)
    if isinstance(members, list):
        return [r for member in members for r in _rubrics(member)]
    return [rubric]


def sandbox_classes(env: Any) -> list[str]:
    """The classes of the environment (or of its group's members) that need sandboxes of their own."""
    from verifiers.envs.sandbox_env import SandboxEnv

    members = getattr(env, "envs", None)
    if isinstance(members, list):
        return [name for member in members for name in sandbox_classes(member)]
    return [type(env).__name__] if isinstance(env, SandboxEnv) else []


def _weight_bounds(rubric: Any) -> list[float] | None:
    """The reward's range if every reward function scores in [0, 1]: the sums of negative and positive weights."""
    try:
        weights = [float(w) for r in _rubrics(rubric) for w in r.get_reward_weights()]
    except Exception:  # a rubric of its own kind, without the usual API: no range to derive
        return None
    return [sum(w for w in weights if w < 0), sum(w for w in weights if w > 0)]


def contract(request: dict[str, Any], report: dict[str, Any]) -> None:
    import openai

    import verifiers as vf

    report.update(sdk_version=getattr(vf, "__version__", "unknown"), stage="load")
    start = time.perf_counter()
    env = vf.load_environment(request["name"])
    report["load_s"] = round(time.perf_counter() - start, 3)
    report["weight_bounds"] = _weight_bounds(env.rubric)
    needs = sandbox_classes(env)
    if needs:
        report.update(stage="done", needs_sandboxes=needs)
        return
    report["stage"] = "rollouts"
    start = time.perf_counter()
    client = openai.AsyncOpenAI(base_url=request["base_url"], api_key="check", max_retries=0)
    results = asyncio.run(env.evaluate(client, "scripted", num_examples=request["num_examples"],
                                       rollouts_per_example=request["rollouts_per_example"]))
    report["rollouts_s"] = round(time.perf_counter() - start, 3)
    report["rollouts"] = [{"reward": _number(o.get("reward")), "metrics": sorted((o.get("metrics") or {}).keys()),
                           "error": str(o["error"])[:TAIL] if o.get("error") else None}
                          for o in results["outputs"]]
    report["stage"] = "done"


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """A pushed message back in the OpenAI shape the rubric saw (tool calls were flattened for the Hub)."""
    shaped: dict[str, Any] = {"role": message.get("role", ""), "content": message.get("content", "")}
    calls = message.get("tool_calls") or []
    if calls:
        shaped["tool_calls"] = [{"id": c.get("id"), "type": "function",
                                 "function": {"name": c.get("name", ""), "arguments": c.get("arguments", "")}}
                                for c in calls]
    if message.get("tool_call_id"):
        shaped["tool_call_id"] = message["tool_call_id"]
    return shaped


def _turns(messages: list[Any]) -> list[tuple[str, str]]:
    return [(str(m.get("role", "")), str(m.get("content", ""))) for m in messages if isinstance(m, dict)]


def dataset_mismatch(env: Any, groups: list[list[dict[str, Any]]]) -> str | None:
    """Why a pushed rollout is not a row of this version's own evaluation dataset (with the run's arguments),
    or None: its example must exist and its prompt and answer be that row's, shaped as a push stores them.
    Without this a pusher could score a wrong completion by editing its answer to match it."""
    from verifiers.envs.dataset import rows_from_inputs
    from verifiers.eval.hub_rollouts import stored_messages, stored_text

    rows: dict[Any, dict[str, Any]] = {}
    for row in rows_from_inputs(env.get_eval_dataset()):
        key = row["example_id"]
        rows[int(key) if isinstance(key, int) or str(key).isdigit() else key] = row
    for group in groups:
        for record in group:
            found = rows.get(record.get("example_id"))
            where = f"rollout {record['position']} (example {record.get('example_id')})"
            if found is None:
                return f"{where}: no such example in this version's evaluation dataset"
            if _turns(stored_messages(found["prompt"], "prompt")) != _turns(record["prompt"]):
                return f"{where}: its prompt is not the dataset's"
            if stored_text(found.get("answer")) != record.get("answer", ""):
                return f"{where}: its answer is not the dataset's"
    return None


def rescore(request: dict[str, Any], report: dict[str, Any]) -> None:
    import verifiers as vf

    report.update(sdk_version=getattr(vf, "__version__", "unknown"), stage="load")
    env = vf.load_environment(request["name"], **request.get("env_args", {}))
    needs = sandbox_classes(env)
    if needs:
        report.update(stage="done", rescorable=False,
                      reason=f"the rubric runs code in sandboxes of its own ({', '.join(needs)})")
        return
    judges = [type(r).__name__ for r in _rubrics(env.rubric)
              if any(c.__name__ in JUDGE_CLASSES for c in type(r).__mro__)]
    if judges:
        report.update(stage="done", rescorable=False, reason=f"the rubric asks a model ({', '.join(judges)})")
        return
    report["stage"] = "dataset"
    problem = dataset_mismatch(env, request["groups"])
    if problem is not None:
        report.update(stage="done", rescorable=True, dataset_mismatch=problem)
        return
    report["stage"] = "scoring"
    scores: list[dict[str, Any]] = []

    async def score_all() -> None:
        for group in request["groups"]:
            states = []
            for record in group:
                state = vf.State()
                state.update(prompt=[_message(m) for m in record["prompt"]],
                             completion=[_message(m) for m in record["completion"]],
                             answer=record.get("answer", ""), task="default", info={}, trajectory=[])
                states.append(state)
            await env.score_group(states)
            scores.extend({"position": record["position"], "reward": _number(state.get("reward"))}
                          for record, state in zip(group, states))

    asyncio.run(score_all())
    report.update(stage="done", rescorable=True, scores=scores)


def child() -> None:
    """The package's process: run the request from stdin, report on the last line of stdout."""
    request = json.loads(sys.stdin.read())
    run = contract if request["mode"] == "contract" else rescore
    report: dict[str, Any] = {"stage": "import"}
    try:
        run(request, report)
    except BaseException as error:  # the environment's own failure is the finding; report it and where
        report.update(error=f"{type(error).__name__}: {error}"[:TAIL], traceback=traceback.format_exc()[-TAIL:])
    print(json.dumps(report), flush=True)


def _undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: /proc/<this pid>/mem and /fd become root's, out of the child's reach."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the nonce is then only as safe as this process's memory
        pass


def _tail_of(file: Any, size: int = 256 * 1024) -> str:
    """The last ``size`` bytes of a file the child wrote, as text (the report is its last line)."""
    end = file.seek(0, 2)
    file.seek(max(0, end - size))
    return file.read().decode("utf-8", "replace")


def _last_json(text: str) -> dict[str, Any] | None:
    lines = text.strip().splitlines()
    try:
        found = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def supervise(path: str) -> None:
    """Run the child on the request at ``path`` and print the one report line the worker trusts."""
    import os
    import subprocess
    import tempfile

    from verifiers.testing import ScriptedServer
    from verifiers.testing.policies import echo

    with open(path, encoding="utf-8") as handle:
        request = json.load(handle)
    os.unlink(path)  # the nonce leaves the disk before any package code runs
    nonce = request.pop("nonce", "")
    _undumpable()
    asked = 0
    answer = echo()

    def counted(scripted: Any) -> Any:
        nonlocal asked
        asked += 1
        return answer(scripted)

    with ScriptedServer(policy=counted, port=0).running() as base_url, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # files, not pipes held in memory: a package that prints gigabytes costs disk the sandbox bounds
        done = subprocess.run([sys.executable, __file__, "--child"], stdout=out, stderr=err, close_fds=True,
                              input=json.dumps({**request, "base_url": base_url}).encode())
        stdout, stderr = _tail_of(out), _tail_of(err)
    sys.stderr.write(stdout + stderr)  # the log tail the worker keeps
    report = _last_json(stdout)
    if report is None:
        report = {"stage": "crash", "error": f"crash: the package's process ended (exit {done.returncode}) without "
                                             "the check's report"}
    claimed = report.get("rollouts")
    if request["mode"] == "contract" and isinstance(claimed, list) and len(claimed) > asked:
        # a report of rollouts the model never answered: printed by the package, not by the harness
        report = {"stage": "forged", "error": f"a forged report: it claims {len(claimed)} rollouts, but the model "
                                              f"was asked {asked} times"}
    report.update(model_requests=asked, child_exit=done.returncode, nonce=nonce)
    print(json.dumps(report), flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child()
    else:
        supervise(sys.argv[1])


if __name__ == "__main__":
    main()
