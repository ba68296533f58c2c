"""``vf-hub push``'s check: the built wheel loads with the SDK and one rollout runs against a local server.

It runs in a child process (the Hub's own code never imports ``verifiers`` or an environment):
the wheel is installed into a scratch folder, loaded with ``verifiers.load_environment``, and
evaluated on one example against ``verifiers.testing.ScriptedServer`` ("echo" policy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hub_server.errors import BadRequest

_CHECK = textwrap.dedent("""
    import asyncio, json, sys
    import openai, verifiers as vf
    from verifiers.testing import ScriptedServer
    env = vf.load_environment(sys.argv[1])
    with ScriptedServer(policy="echo", port=0).running() as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="check", max_retries=0)
        results = asyncio.run(env.evaluate(client, "scripted", num_examples=1, rollouts_per_example=1))
    [output] = results["outputs"]
    print(json.dumps({"reward": output["reward"]}))
""")


def check_package(wheel: Path, name: str) -> float:
    """Install the wheel into a scratch folder, load it with the SDK and run one rollout."""
    with tempfile.TemporaryDirectory(prefix="vf-hub-check-") as scratch:
        pip = [sys.executable, "-m", "pip", "--isolated", "install", "-q", "--no-deps", "--no-index",
               "--target", scratch, str(wheel)]
        done = subprocess.run(pip, capture_output=True, text=True)
        if done.returncode == 0:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [scratch, os.environ.get("PYTHONPATH")]))}
            done = subprocess.run([sys.executable, "-c", _CHECK, name], capture_output=True, text=True,
                                  env=env, cwd=scratch, timeout=600)
    if done.returncode != 0:
        raise BadRequest("the package failed its check (load + one rollout); --no-check skips it:\n"
                         f"{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["reward"])
