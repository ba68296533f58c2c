"""``Environment``: a dataset, a rollout, and a rubric.

The base class holds what every environment shares: its datasets, parser,
rubric and default sampling arguments. The turn loop lives in
:class:`~verifiers.envs.multiturn_env.MultiTurnEnv`; running many rollouts and
saving them lives in :mod:`verifiers.eval.engine`; token outputs for training
live in :mod:`verifiers.tokens`. The methods here are thin doors to those.
"""

from __future__ import annotations

import abc
import copy
import logging
from collections.abc import Iterable
from typing import Any

from datasets import Dataset

from verifiers.awaitables import maybe_await
from verifiers.compat.calls import tuple_model_response
from verifiers.decorators import teardown_handlers
from verifiers.envs.dataset import format_dataset
from verifiers.envs.dataset_builder import as_given
from verifiers.envs.tool_defs import ToolDefList, offered_tools
from verifiers.errors import UsageError
from verifiers.messages import to_plain
from verifiers.parsers.parser import Parser
from verifiers.rollout.conventions import STATE_ERA, Conventions
from verifiers.rollout.model_call import RetryPolicy, request_model
from verifiers.rubrics.rubric import Rubric
from verifiers.tools.schema import to_oai_tool
from verifiers.types import GenerateOutputs, ProcessedOutputs


def _is_state_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``get_model_response(state, prompt)`` (State era) vs ``(client, model, prompt, ...)``."""
    first = args[0] if args else kwargs.get("state", kwargs.get("client"))
    return isinstance(first, dict)


class Environment(abc.ABC):
    """Base of every environment.

    Args:
        dataset / eval_dataset: rows with ``question`` (or ``prompt``), ``answer``, ``task``, ``info``.
        system_prompt, few_shot: prepended to each prompt built from ``question``.
        parser, rubric: default to ``Parser()`` and ``Rubric(parser=parser)``.
        sampling_args: defaults merged under each call's sampling args.
        message_type: ``"chat"`` or ``"completion"``.
        oai_tools / tool_defs: tool schemas offered to the model.
        max_retries: retries of transient model API failures within a rollout.
        **kwargs: kept as attributes, as the original does (environments rely on it).
    """

    #: How the core drives this environment's hooks and scores it: the State era's, unless
    #: :class:`~verifiers.envs.multiturn_env.MultiTurnEnv` finds the class written for the tuple era.
    conventions: Conventions = STATE_ERA

    def __init__(
        self,
        dataset: Dataset | None = None,
        eval_dataset: Dataset | None = None,
        system_prompt: str | None = None,
        few_shot: list[dict[str, Any]] | None = None,
        parser: Parser | None = None,
        rubric: Rubric | None = None,
        sampling_args: dict[str, Any] | None = None,
        message_type: str = "chat",
        oai_tools: list[dict[str, Any]] | None = None,
        tool_defs: list[dict[str, Any]] | None = None,
        max_workers: int = 512,
        max_retries: int = 3,
        env_id: str | None = None,
        env_args: dict[str, Any] | None = None,
        pass_threshold: float = 0.5,
        **kwargs: Any,
    ) -> None:
        self.logger = logging.getLogger(f"verifiers.envs.{type(self).__name__}")
        if message_type not in ("chat", "completion"):
            raise ValueError(f"message_type must be 'chat' or 'completion', got {message_type!r}")
        self.message_type = message_type
        self.system_prompt = system_prompt
        self.few_shot = few_shot
        self.parser = parser if parser is not None else Parser()
        self.rubric = rubric if rubric is not None else Rubric(parser=self.parser)
        if type(self.parser) is not type(getattr(self.rubric, "parser", self.parser)):
            self.logger.warning("the environment's parser and its rubric's parser are of different types")
        self.oai_tools = [to_oai_tool(t) for t in (oai_tools or tool_defs or [])]
        self.max_workers = max_workers
        self.retry = RetryPolicy(max_retries=max_retries)
        self.env_id = env_id or ""
        self.env_args = dict(env_args or {})
        self.pass_threshold = pass_threshold
        self.sampling_args: dict[str, Any] = {"n": 1, "extra_body": {}}
        for key, value in (sampling_args or {}).items():
            if key == "extra_body" and isinstance(value, dict):
                self.sampling_args["extra_body"].update(value)
            else:
                self.sampling_args[key] = value
        for key, value in kwargs.items():
            setattr(self, key, value)
        if kwargs:
            self.logger.debug("extra keyword arguments kept as attributes: %s", sorted(kwargs))
        if dataset is None and eval_dataset is None:
            raise ValueError("Either dataset or eval_dataset must be provided")
        if message_type == "completion":
            if system_prompt or few_shot:
                raise ValueError("system_prompt and few_shot are not supported with message_type='completion'")
            # Completion datasets are used as given; a builder still runs on first use.
            self.dataset, self.eval_dataset = as_given(dataset), as_given(eval_dataset)
        else:
            self.dataset = self._format(dataset)
            self.eval_dataset = self._format(eval_dataset)

    # -- datasets ---------------------------------------------------------------------------

    def _format(self, dataset: Dataset | None) -> Dataset | None:
        if dataset is None:
            return None
        return format_dataset(dataset, self.system_prompt, self.few_shot)

    def format_dataset(self, dataset: Dataset, system_prompt: str | None = None, few_shot: Any = None,
                       question_key: str = "question", answer_key: str = "answer") -> Dataset:
        return format_dataset(dataset, system_prompt, few_shot, question_key, answer_key)

    def get_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        if self.dataset is None:
            raise ValueError("this environment has no training dataset")
        if seed is not None:
            self.dataset = self.dataset.shuffle(seed=seed)
        return self.dataset.select(range(min(n, len(self.dataset)))) if n > 0 else self.dataset

    def get_eval_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        if self.eval_dataset is None:
            self.logger.warning("eval_dataset is not set, falling back to the training dataset")
            return self.get_dataset(n, seed)
        if seed is not None:
            self.eval_dataset = self.eval_dataset.shuffle(seed=seed)
        return self.eval_dataset.select(range(min(n, len(self.eval_dataset)))) if n > 0 else self.eval_dataset

    def get_reward_funcs(self, **kwargs: Any) -> list[Any]:
        return self.rubric.get_reward_funcs()

    def get_reward_weights(self, **kwargs: Any) -> list[float]:
        return self.rubric.get_reward_weights()

    @property
    def tool_defs(self) -> ToolDefList:
        """The offered tools as provider-neutral :class:`Tool` defs: a live view of ``oai_tools``,
        so State-era code may assign it, ``append`` to it or edit an item (0.3.0 kept a plain list here)."""
        return ToolDefList(self)

    @tool_defs.setter
    def tool_defs(self, tools: Iterable[Any] | None) -> None:
        if isinstance(tools, ToolDefList) and tools._owner is self:
            return  # ``env.tool_defs += [...]`` assigns the view back after editing it in place
        self.oai_tools = [to_oai_tool(t) for t in tools or []]

    # -- the model --------------------------------------------------------------------------

    async def get_model_response(self, *args: Any, **kwargs: Any) -> Any:
        """One model response: ``(state, prompt)`` in the State era, ``(client, model, prompt, ...)`` before.

        The tuple era signals an overlong prompt with a dummy response whose id is
        ``"overlong-prompt"``; the State era raises :class:`OverlongPromptError`.
        """
        if _is_state_call(args, kwargs):
            return await self._state_model_response(*args, **kwargs)
        return await tuple_model_response(self, *args, **kwargs)

    async def _state_model_response(self, state: Any, prompt: Any, client: Any = None, model: str | None = None,
                                    tool_defs: list[Any] | None = None,
                                    sampling_args: dict[str, Any] | None = None) -> Any:
        """0.3.0's call: each argument left out comes from the state; tools from ``state["tool_defs"]``,
        or ``state["oai_tools"]`` when code set that one (see :func:`~verifiers.envs.tool_defs.offered_tools`)."""
        if tool_defs is None:
            tools = offered_tools(state)
        else:
            tools = [to_oai_tool(t) for t in tool_defs]  # a one-call choice: the state is left as it is
        return await request_model(
            client if client is not None else state["client"], model or state["model"], prompt,
            tools=tools or None,
            sampling_args=sampling_args or state.get("sampling_args"),
            message_type=self.message_type, retry=self.retry,
        )

    def set_max_retries(self, max_retries: int) -> None:
        """From now on, retry a transient model API failure ``max_retries`` times (``max_retries + 1``
        attempts in all); ``vf-eval --max-retries`` sets it over the constructor's ``max_retries``."""
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise UsageError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.retry = RetryPolicy(max_retries=max_retries)

    def set_scoring_timeout(self, seconds: float | None) -> None:
        """From now on, give each reward function ``seconds`` per rollout (``None``: no limit);
        ``vf-eval --scoring-timeout`` sets it over the rubric's own (see :meth:`Rubric.set_scoring_timeout`)."""
        rubric = getattr(self, "rubric", None)
        if isinstance(rubric, Rubric):
            rubric.set_scoring_timeout(seconds)

    # -- rollouts ---------------------------------------------------------------------------

    @abc.abstractmethod
    async def rollout(self, *args: Any, **kwargs: Any) -> Any:
        """Run one rollout (see MultiTurnEnv for both call forms)."""

    async def generate(self, inputs: Any, client: Any, model: str, sampling_args: dict[str, Any] | None = None,
                       **kwargs: Any) -> GenerateOutputs:
        """Run (and score) one rollout per input row; see :func:`verifiers.eval.engine.generate`."""
        from verifiers.eval.engine import generate

        return await generate(self, inputs, client, model, sampling_args, **kwargs)

    a_generate = generate

    def generate_sync(self, inputs: Any, client: Any, model: str, sampling_args: dict[str, Any] | None = None,
                      **kwargs: Any) -> GenerateOutputs:
        from verifiers.eval.engine import run_sync

        return run_sync(self.generate(inputs, client, model, sampling_args, **kwargs))

    async def evaluate(self, client: Any, model: str, sampling_args: dict[str, Any] | None = None,
                       num_examples: int = -1, rollouts_per_example: int = 1, **kwargs: Any) -> GenerateOutputs:
        """Evaluate on ``num_examples`` rows of the eval dataset, ``rollouts_per_example`` times each."""
        from verifiers.eval.engine import expand_rollouts

        dataset = self.get_eval_dataset(n=num_examples)
        inputs = expand_rollouts(dataset, rollouts_per_example, block_major=self.conventions.block_major)
        return await self.generate(inputs, client, model, sampling_args, **kwargs)

    def evaluate_sync(self, client: Any, model: str, sampling_args: dict[str, Any] | None = None,
                      num_examples: int = -1, rollouts_per_example: int = 1, **kwargs: Any) -> GenerateOutputs:
        from verifiers.eval.engine import run_sync

        return run_sync(self.evaluate(client, model, sampling_args, num_examples, rollouts_per_example, **kwargs))

    # -- scoring ----------------------------------------------------------------------------

    def monitor_metrics(self, state: Any) -> dict[str, float]:
        """Weight-0 metrics the environment reports on its own (0.3.0's monitor rubrics)."""
        return {}

    async def score_group(self, states: list[Any]) -> None:
        """Score one example's rollouts with the rubric as the environment's era did (its ``conventions``), then
        add the monitor metrics."""
        await self.conventions.score_group(self.rubric, states)
        for state in states:
            await self.rubric.cleanup(state)  # the rubric's @vf.cleanup hooks, after its scores
            metrics = dict(state.get("metrics") or {})
            for name, value in self.monitor_metrics(state).items():
                metrics.setdefault(name, value)  # a rubric's own metric of that name wins
            state["metrics"] = metrics

    async def teardown(self) -> None:
        """Run the environment's and its rubric's ``@vf.teardown`` handlers (once, after all rollouts)."""
        for handler in teardown_handlers(self):
            await maybe_await(handler)
        await self.rubric.teardown()

    # -- training outputs -------------------------------------------------------------------

    def process_env_results_vllm(self, prompts: list[Any], completions: list[Any], states: list[Any],
                                 rewards: list[float], processing_class: Any, **kwargs: Any) -> ProcessedOutputs:
        """Token ids, masks and logprobs per rollout, from the server's own tokens (tuple-era API)."""
        from verifiers.tokens.samples import process_env_results_vllm

        return process_env_results_vllm(prompts, completions, states, rewards, processing_class, **kwargs)

    process_env_results = process_env_results_vllm

    def make_dataset(self, results: GenerateOutputs, state_columns: list[str] | None = None, **_: Any) -> Dataset:
        """The results as a ``datasets.Dataset``, one row per rollout."""
        rows = [dict(o) for o in results["outputs"]]
        for row, state in zip(rows, results.state):
            for column in state_columns or []:
                row[column] = to_plain(state.get(column))
        return Dataset.from_list(copy.deepcopy(rows))


__all__ = ["Environment"]
