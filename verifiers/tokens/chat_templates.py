"""Jinja chat templates written for this project: two for the byte tokenizer, one for SmolLM2-Instruct.

All render ChatML-style turns (``<|im_start|>role\\n...<|im_end|>\\n``), list the
tools in the system turn, one signature line each (``multiply(a: integer, b: integer) - Multiply
two integers.``), and render an assistant's tool calls as
``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``.

The listing is a signature rather than the schema's JSON because every byte is a token here: the JSON
of one two-argument tool made a multiply-tool prompt 525 tokens long (the arithmetic prompt is 29),
and the tiny model trained on it never learnt to copy the factors into its call (SFT loss flat at the
chance level of the digits for 170 steps); the signature line halves the prompt.

- :data:`CHATML` is *prefix-monotone*: rendering a longer conversation never
  changes how the earlier turns were rendered, so the tokens of every turn can
  be laid end to end in one training sample.
- :data:`QWEN3_STYLE` behaves like the Qwen3 family: the ``<think>...</think>``
  block of an assistant turn is dropped once a later user message exists, so
  the history the model sees is rewritten between turns (the case that breaks
  naive token concatenation). ``enable_thinking=False`` adds an empty think
  block to the generation prompt.
- :data:`SMOLLM2` is :data:`CHATML` with SmolLM2-Instruct's default system turn: the real model the trainer
  prepares (``vf-train model prepare smollm2-135m-instruct``) ships a template without tools.
"""

from __future__ import annotations

# Shared pieces; templates are composed in Python so they stay in step.
_MACROS = (
    """\
{%- macro text(content) -%}
{%- if content is string -%}{{ content }}
{%- elif content -%}{%- for part in content if part.type == 'text' -%}{{ part.text }}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- macro tool_calls(calls) -%}
{%- for call in calls -%}
{%- set fn = call.function if call.function is defined else call -%}
{{- '<tool_call>\\n{"name": ' ~ (fn.name | tojson) ~ ', "arguments": ' -}}
{%- if fn.arguments is string -%}{{ fn.arguments }}{%- else -%}{{ fn.arguments | tojson }}{%- endif -%}
{{- '}\\n</tool_call>' -}}
{%- endfor -%}
{%- endmacro -%}
{%- set ns = namespace(first=0, last_user=-1) -%}
{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if messages and messages[0].role == 'system' -%}
{{- text(messages[0].content) ~ '\\n\\n' -}}
{%- set ns.first = 1 -%}
__TOOLS_DEFAULT_SYSTEM__{%- endif -%}
{{- '# Tools\\n' -}}
{%- for tool in tools -%}
{%- set fn = tool.function if tool.function is defined else tool -%}
{%- set params = fn.parameters.properties if fn.parameters is defined"""
    # One Jinja tag in two Python pieces, only to keep the line short: the template text is unchanged.
    """ and fn.parameters.properties is defined else {} -%}
{{- fn.name ~ '(' -}}
{%- for name, spec in params.items() -%}
{{- (', ' if not loop.first else '') ~ name ~ ': ' ~ (spec.type if spec.type is defined else 'any') -}}
{%- endfor -%}
{{- ')' ~ (' - ' ~ fn.description if fn.description else '') ~ '\\n' -}}
{%- endfor -%}
{{- 'Call one as <tool_call>{"name": ..., "arguments": {...}}</tool_call>.<|im_end|>\\n' -}}
__DEFAULT_SYSTEM__{%- endif -%}
"""
)

_TURNS = """\
{%- for m in messages -%}
{%- if loop.index0 >= ns.first -%}
{{- '<|im_start|>' ~ m.role ~ '\\n' -}}
{%- if m.role == 'assistant' -%}
{%- set content = text(m.content) -%}
__ASSISTANT_CONTENT__
{{- content -}}
{%- if m.tool_calls -%}{{- tool_calls(m.tool_calls) -}}{%- endif -%}
{%- elif m.role == 'tool' -%}
{{- '<tool_response>\\n' ~ text(m.content) ~ '\\n</tool_response>' -}}
{%- else -%}
{{- text(m.content) -}}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
"""

_STRIP_OLD_THINKING = """\
{%- if loop.index0 < ns.last_user and '</think>' in content -%}
{%- set content = content.split('</think>')[-1].lstrip('\\n') -%}
{%- endif -%}"""

def _with_default_system(system: str | None) -> str:
    """The shared pieces, with ``system`` as the system turn of a conversation that brings none (None: no turn)."""
    if system is None:
        return _MACROS.replace("__TOOLS_DEFAULT_SYSTEM__", "").replace("__DEFAULT_SYSTEM__", "")
    quoted = system.replace("\\", "\\\\").replace("'", "\\'")
    return _MACROS.replace(
        "__TOOLS_DEFAULT_SYSTEM__", f"{{%- else -%}}{{{{- '{quoted}\\n\\n' -}}}}\n"
    ).replace(
        "__DEFAULT_SYSTEM__",
        "{%- elif messages and messages[0].role != 'system' -%}"
        f"{{{{- '<|im_start|>system\\n{quoted}<|im_end|>\\n' -}}}}\n",
    )


CHATML = (
    _with_default_system(None)
    + _TURNS.replace("__ASSISTANT_CONTENT__\n", "")
    + "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n"
)
"""A prefix-monotone ChatML template."""

QWEN3_STYLE = (
    _with_default_system(None)
    + _TURNS.replace("__ASSISTANT_CONTENT__", _STRIP_OLD_THINKING)
    + "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}"
    + "{%- if enable_thinking is defined and not enable_thinking -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}"
    + "{%- endif -%}\n"
)
"""A ChatML template that drops ``<think>`` blocks of assistant turns before the last user message."""

SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
"""The system turn SmolLM2-Instruct's own template adds when a conversation has none."""

SMOLLM2 = (
    _with_default_system(SMOLLM2_SYSTEM)
    + _TURNS.replace("__ASSISTANT_CONTENT__\n", "")
    + "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n"
)
"""The project's template for SmolLM2-Instruct, which ships one without tools: for a conversation without tools
it renders exactly what the model's own template renders (its default system turn included); with tools it
lists them in the system turn and writes calls as ``<tool_call>`` blocks, as :data:`CHATML` does (vLLM's
``hermes`` parser reads them). Prefix-monotone, so a multi-turn rollout's turns lie end to end."""

TEMPLATES: dict[str, str] = {"chatml": CHATML, "qwen3": QWEN3_STYLE, "smollm2": SMOLLM2}
"""Templates by the short names the CLI accepts."""

__all__ = ["CHATML", "QWEN3_STYLE", "SMOLLM2", "SMOLLM2_SYSTEM", "TEMPLATES"]
