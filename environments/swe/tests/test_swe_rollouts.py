"""Rollouts of the swe environment in real local sandboxes, driven by the scripted OpenAI-compatible server.

Scripted policies stand in for the model: one applies the reference fix with bash, one does nothing, one fixes
the bug and breaks another function, one makes every kind of bad edit_file call, one kills its sandbox.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from swe.environment import SYSTEM_PROMPT, SweEnv, build_dataset, make_rubric
from swe.instances import read_instances

from verifiers.errors import SandboxError
from verifiers.sandboxes import errors as sandbox_errors
from verifiers.testing import Reply, ScriptedRequest, ScriptedServer
from verifiers.testing.policies import content_text

Step = tuple[str, dict[str, Any]]


def _call(turn: int, name: str, arguments: dict[str, Any]) -> Reply:
    return Reply("", tool_calls=[{"id": f"call_{turn}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(arguments)}}])


def _apply(patch: str) -> Step:
    return "bash", {"command": f"patch -p1 <<'PATCH'\n{patch}PATCH"}


class Agent:
    """Plays each issue by its plan: a list of tool calls, then a final text reply."""

    def __init__(self, plans: dict[str, list[Step]]) -> None:
        self.plans = plans

    def __call__(self, request: ScriptedRequest) -> Reply:
        steps = self.plans[request.last_user_text]
        turn = request.assistant_turns
        return _call(turn, *steps[turn]) if turn < len(steps) else Reply("Done.")


async def _run(instances: list[dict[str, Any]], plans: list[list[Step]]) -> list[dict[str, Any]]:
    """One rollout per instance, the agent following the plan at the same position; outputs in that order."""
    env = SweEnv(eval_dataset=build_dataset(instances), system_prompt=SYSTEM_PROMPT, rubric=make_rubric(),
                 max_turns=12, timeout_per_command_seconds=60)
    rows = list(env.get_eval_dataset())
    by_id = {row["instance_id"]: plan for row, plan in zip(instances, plans)}
    agent = Agent({row["question"]: by_id[row["info"]["instance_id"]] for row in rows})
    with ScriptedServer(agent, port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        results = await env.evaluate(client, "scripted", num_examples=len(rows), rollouts_per_example=1)
    by_instance = {o["info"]["instance_id"]: o for o in results["outputs"]}
    return [by_instance[row["instance_id"]] for row in instances]


def _breaker_for(instance: dict[str, Any]) -> dict[str, Any]:
    """Another bug whose failing tests include some of ``instance``'s PASS_TO_PASS tests."""
    keep = set(instance["PASS_TO_PASS"])
    return next(other for other in read_instances() if other["project"] == instance["project"]
                and other["function"] != instance["function"] and keep & set(other["FAIL_TO_PASS"]))


async def test_the_reference_fix_scores_one_doing_nothing_zero_and_breaking_a_pass_to_pass_test_zero() -> None:
    evaluation = read_instances("eval")
    victim = next(row for row in evaluation if any(
        o["project"] == row["project"] and o["function"] != row["function"]
        and set(row["PASS_TO_PASS"]) & set(o["FAIL_TO_PASS"]) for o in read_instances()))
    fix_me, leave_me = [row for row in evaluation if row is not victim][:2]
    check = ("bash", {"command": "python3 -m pytest -q -x " + fix_me["FAIL_TO_PASS"][0]})
    plans = [[check, _apply(fix_me["fix_patch"])], [],
             [_apply(victim["fix_patch"]), _apply(_breaker_for(victim)["bug_patch"])]]
    fixed, idle, broke = await _run([fix_me, leave_me, victim], plans)
    assert [o["error"] for o in (fixed, idle, broke)] == [None, None, None]
    assert [o["reward"] for o in (fixed, idle, broke)] == [1.0, 0.0, 0.0]
    # the agent's own test run failed before its fix: pytest works in the sandbox and the bug is there
    first_tool_reply = next(content_text(m["content"]) for m in fixed["completion"] if m["role"] == "tool")
    assert "1 failed" in first_tool_reply and fixed["metrics"]["fail_to_pass"] == 1.0
    assert idle["metrics"]["fail_to_pass"] == 0.0 and idle["metrics"]["pass_to_pass"] == 1.0
    assert broke["metrics"]["fail_to_pass"] == 1.0 and broke["metrics"]["pass_to_pass"] < 1.0
    assert all(o["metrics"]["sandbox_failed"] == 0.0 for o in (fixed, idle, broke))


async def test_bad_edit_file_calls_are_answered_and_the_rollout_goes_on() -> None:
    row = read_instances("eval")[0]
    target = row["file"]
    calls: list[Step] = [
        ("edit_file", {"path": "../../etc/passwd", "old": "root", "new": "x"}),
        ("edit_file", {"path": "/etc/passwd", "old": "root", "new": "x"}),
        ("edit_file", {"path": "no_such_file.py", "old": "a", "new": "b"}),
        ("edit_file", {"path": target, "old": "text that is not in the file 1234", "new": "b"}),
        ("edit_file", {"path": target, "old": "def ", "new": "def  "}),
        ("edit_file", {"path": target, "old": "", "new": "b"}),
        ("edit_file", {"path": target.split("/")[0], "old": "a", "new": "b"}),
        ("edit_file", {"path": target}),
        ("bash", {"command": "git status 2>/dev/null; patch -p1 --dry-run <<'PATCH'\n" + row["fix_patch"] + "PATCH"}),
    ]
    (output,) = await _run([row], [calls])
    replies = [content_text(m["content"]) for m in output["completion"] if m["role"] == "tool"]
    assert replies[0].startswith("Error: '../../etc/passwd' is not a file path inside the repository")
    assert replies[1].startswith("Error: '/etc/passwd' is not a file path inside the repository")
    assert replies[2] == "Error: no file 'no_such_file.py' in the repository."
    assert replies[3].startswith(f"Error: old does not occur in {target}; it must occur exactly once")
    assert replies[4].startswith("Error: old occurs ") and "times in" in replies[4]
    assert replies[5] == "Error: old must be the non-empty text to replace."
    assert replies[6].startswith("Error: ") and "not a regular file" in replies[6]
    assert "new" in replies[7] and output["tool_errors"] >= 1  # a call missing an argument is a tool error
    assert "checking file" in replies[8]  # the file was left untouched: the fix still applies
    assert output["error"] is None and output["reward"] == 0.0 and output["num_turns"] == len(calls) + 1


async def test_edit_file_applies_the_fix() -> None:
    row = read_instances("eval")[0]
    lines = row["fix_patch"].splitlines()[2:]  # past the ---/+++ header
    removed = [line[1:] for line in lines if line.startswith("-")]
    added = [line[1:] for line in lines if line.startswith("+")]
    step = ("edit_file", {"path": row["file"], "old": "\n".join(removed), "new": "\n".join(added)})
    (output,) = await _run([row], [[step]])
    reply = next(content_text(m["content"]) for m in output["completion"] if m["role"] == "tool")
    assert reply.startswith(f"Edited {row['file']}: replaced {len(removed)} line(s) at line ")
    assert output["reward"] == 1.0


async def test_a_sandbox_that_dies_is_an_error_not_a_zero() -> None:
    (output,) = await _run(read_instances("eval")[:1], [[("bash", {"command": "kill -9 $PPID"})]])
    kind = output["error"].split(":", 1)[0]  # outputs carry the error as "Type: message"
    assert kind == "SandboxNotRunningError" and issubclass(getattr(sandbox_errors, kind), SandboxError)
    assert "stopped" in output["error"]
    assert output["reward"] == 0.0 and output["metrics"] == {}


async def test_the_image_is_read_only_holds_no_fix_and_the_grader_restores_the_tests() -> None:
    cheat, fix = read_instances("eval")[:2]
    module = cheat["FAIL_TO_PASS"][0].split("::")[0]
    cheat_plan: list[Step] = [
        ("bash", {"command": "diff -r /image/repo . && echo SAME AS THE IMAGE"}),
        ("bash", {"command": "touch /image/pytest/x /image/repo/x"}),
        ("bash", {"command": f"printf 'def test_ok():\\n    pass\\n' > {module} && chmod 444 {module}"
                             f" && python3 -m pytest -q {module}"}),
    ]
    # the reference fix, then every file and directory of the repository made read-only
    fix_plan = [_apply(fix["fix_patch"]), ("bash", {"command": "chmod -R a-w . && echo locked"})]
    cheated, fixed = await _run([cheat, fix], [cheat_plan, fix_plan])
    replies = [content_text(m["content"]) for m in cheated["completion"] if m["role"] == "tool"]
    assert replies[0].strip() == "SAME AS THE IMAGE"  # /image holds the buggy tree: nothing to copy the fix from
    assert replies[1].count("Read-only file system") == 2
    assert "1 passed" in replies[2]  # the model's rewritten test passes in its own run...
    assert cheated["error"] is None and cheated["reward"] == 0.0  # ...and the grader ran the real one
    assert cheated["metrics"]["fail_to_pass"] == 0.0
    assert fixed["error"] is None and fixed["reward"] == 1.0


async def test_an_instance_whose_image_cannot_be_built_is_a_sandbox_error() -> None:
    row = read_instances("eval")[0]
    broken = {**row, "instance_id": row["instance_id"] + "-broken", "bug_patch": "not a patch\n"}
    (output,) = await _run([broken], [[]])
    assert output["error"].startswith("SandboxError: could not build the image of " + broken["instance_id"])
    assert output["reward"] == 0.0 and output["metrics"] == {}
