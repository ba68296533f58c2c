"""A sandbox environment: the model's Python code runs in an isolated sandbox, one per rollout.

``PythonEnv`` gives the model one tool, ``python(code)``: a persistent interpreter session (variables stay
defined between calls, a final expression shows as ``Out[n]: ...``) inside a sandbox of the local
bubblewrap backend (no network, its own file system and limits; docs/sandboxes.md). Each rollout's sandbox
is deleted when the rollout ends. Reward: 1 for the right digit sum. Offline, the scripted model sets ``n``
in one cell and sums its digits in the next, which only works because the session remembers ``n``; then it
answers with the second cell's value.

    .venv/bin/python examples/sandbox_env.py
    .venv/bin/python examples/sandbox_env.py --sandbox-root /var/tmp/my-sandboxes   # where sandboxes live
    .venv/bin/python examples/sandbox_env.py --base-url http://127.0.0.1:8000/v1 --model my-model

Needs bubblewrap (``bash scripts/setup_sandbox.sh``).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from datasets import Dataset
from model_server import arguments, last_reply, model_client, report, tool_call

import verifiers as vf
from verifiers.sandboxes import AsyncSandboxClient, LocalBackend, LocalBackendConfig
from verifiers.testing import Reply, ScriptedRequest

DIGIT_SUMS = {15: 26, 100: 115, 256: 376, 1000: 1366}  # the sum of the decimal digits of 2**n, checked by hand


def make_env(sandboxes: AsyncSandboxClient) -> vf.PythonEnv:
    rows = [{"question": f"What is the sum of the decimal digits of 2**{n}?", "answer": str(total)}
            for n, total in DIGIT_SUMS.items()]
    dataset = Dataset.from_list(rows)

    def correct_sum(completion: vf.Messages, answer: str) -> float:
        return float(last_reply(completion) == answer)

    return vf.PythonEnv(dataset=dataset, eval_dataset=dataset, rubric=vf.Rubric(funcs=[correct_sum]),
                        sandbox_client=sandboxes, memory_gb=0.5, timeout_per_command_seconds=20, max_turns=4,
                        system_prompt="Use the python tool. Answer with the number only.")


def two_cells(request: ScriptedRequest) -> Reply:
    """The scripted model: ``n = 2**k`` in one call, the digit sum of ``n`` in the next, then the answer."""
    results = [str(m["content"]) for m in request.messages if m["role"] == "tool"]
    if not results:
        exponent = re.search(r"2\*\*(\d+)", request.last_user_text)
        return tool_call("python", {"code": f"n = 2**{exponent.group(1) if exponent else 0}"}, 0)
    if len(results) == 1:
        return tool_call("python", {"code": "sum(int(d) for d in str(n))"}, 1)
    value = re.search(r"Out\[\d+\]: (.*)", results[-1])
    return Reply(value.group(1) if value else results[-1])


def describe(output: dict[str, Any]) -> str:
    outputs = " | ".join(str(m["content"]) for m in output["completion"] if m["role"] == "tool")
    return f"{output['prompt'][-1]['content']} sandbox said: {outputs} -> {last_reply(output['completion'])}"


async def evaluate(args: Any) -> vf.GenerateOutputs:
    # A backend of our own, closed at the end, so the run leaves no sandbox behind whatever happens.
    config = LocalBackendConfig(root_dir=args.sandbox_root) if args.sandbox_root else LocalBackendConfig()
    backend = LocalBackend(config)
    try:
        env = make_env(AsyncSandboxClient(backend))
        with model_client(args, two_cells) as client:
            return await env.evaluate(client, args.model, num_examples=-1, rollouts_per_example=1)
    finally:
        await backend.close()


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--sandbox-root", type=Path, help="Folder for the sandboxes (default: the backend's own; "
                                                          "every parent must be world-searchable).")
    args = parser.parse_args()
    report(asyncio.run(evaluate(args)), describe)


if __name__ == "__main__":
    main()
