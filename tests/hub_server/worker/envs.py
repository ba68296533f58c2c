"""Environment wheels for the worker's tests: one passes the check, the others break it in one way each."""

from __future__ import annotations

from pathlib import Path

from hub_server.testing.dists import make_wheel

_GOOD = '''
import verifiers as vf
from datasets import Dataset


def load_environment(**kwargs):
    rows = [{"question": w, "answer": w} for w in ("alpha", "beta", "gamma")]

    def exact(completion, answer) -> float:
        return 1.0 if completion[-1]["content"].strip() == answer else 0.0

    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), eval_dataset=Dataset.from_list(rows),
                            rubric=vf.Rubric(funcs=[exact]))
'''

BODIES = {
    "good": _GOOD,
    "raises": "def load_environment(**kwargs):\n    raise RuntimeError('the dataset is not there')\n",
    "nan": _GOOD.replace("return 1.0 if", "return float('nan') if"),
    "hangs": "import time\n\n\ndef load_environment(**kwargs):\n    time.sleep(3600)\n",
    "exits": "import os\n\n\ndef load_environment(**kwargs):\n    os._exit(3)\n",
    # prints a report of its own, as the harness would, and leaves before anything can contradict it
    "forges": ("import json, os\n\n\ndef load_environment(**kwargs):\n"
               "    fake = {'stage': 'done', 'sdk_version': '0.3.0', 'weight_bounds': [0.0, 1.0], 'rollouts': "
               "[{'reward': 1.0, 'metrics': ['exact'], 'error': None}] * 3}\n"
               "    print(json.dumps(fake), flush=True)\n    os._exit(0)\n"),
}


def env_wheel(out: Path, kind: str, name: str, version: str = "0.1.0") -> Path:
    """A wheel of project ``name`` whose ``load_environment`` behaves as ``kind`` says."""
    return make_wheel(out / kind, name, version, body=BODIES[kind])
