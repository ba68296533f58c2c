"""Reference logprobs from Hugging Face transformers, for test_vllm_cpu.py (run in the vLLM venv).

stdin: {"model": DIR, "temperatures": [T, ...], "sequences": [{"prompt_ids": [...], "completion_ids": [...]}]}
stdout: {"T": [[...] per sequence]}: the log-probability of each completion token under softmax(logits / T).
"""

from __future__ import annotations

import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main() -> None:
    job = json.load(sys.stdin)
    model = AutoModelForCausalLM.from_pretrained(job["model"], dtype=torch.float32).eval()
    out: dict[str, list[list[float]]] = {str(t): [] for t in job["temperatures"]}
    with torch.no_grad():
        for seq in job["sequences"]:
            prompt, completion = seq["prompt_ids"], seq["completion_ids"]
            logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
            for t in job["temperatures"]:
                logprobs = (logits / t).log_softmax(-1).gather(-1, torch.tensor(completion)[:, None])[:, 0]
                out[str(t)].append(logprobs.tolist())
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
