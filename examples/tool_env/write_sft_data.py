"""Write the multiply-tool environment's gold transcripts as ``vf-train sft`` JSONL rows.

Each row is ``{"prompt", "completion", "tools"}``: the training split's prompt, a correct rollout
(:func:`multiply_tool.gold_completion`: the call, the tool's reply, the answer) and the environment's tool
schemas, so the SFT tokens are the ones vLLM renders for the RL requests.

    python examples/tool_env/write_sft_data.py OUT.jsonl [--rows N]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from multiply_tool import gold_completion

import verifiers as vf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="JSONL file to write.")
    parser.add_argument(
        "--rows",
        type=int,
        default=5000,
        help="Training rows of the environment to write.",
    )
    parser.add_argument(
        "--env-args",
        type=json.loads,
        default={},
        help="More load_environment arguments, as JSON (the RL config's [env.args]: the same rows).",
    )
    args = parser.parse_args()
    if not isinstance(args.env_args, dict):
        parser.error("--env-args must be a JSON object")
    env = vf.load_environment("multiply-tool", **{**args.env_args, "num_train_examples": args.rows})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for row in env.get_dataset():
            line = {"prompt": list(row["prompt"]), "completion": gold_completion(row["question"]),
                    "tools": env.oai_tools}  # fmt: skip
            out.write(json.dumps(line) + "\n")
    print(f"wrote {args.rows} rows to {args.out}")


if __name__ == "__main__":
    main()
