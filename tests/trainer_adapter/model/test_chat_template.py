"""A model folder's chat template is checked for what the masks need, at the command line, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.real_model import smollm2_folder
from trainer_adapter.cli.vf_train import app
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.model.chat_template import check_chat_template, check_tokenizer_template
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.export import write_hf_folder

NO_END = ("{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
NOT_A_PREFIX = ("{% for m in messages %}{{ m.role + ': ' + m.content + '<|im_end|>' }}{% endfor %}"
                "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
BROKEN = "{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}"


def _folder(tmp_path: Path, template: str | None) -> Path:
    model, tokenizer = load_model(ModelConfig(seed=0))
    tokenizer.chat_template = template
    return write_hf_folder(model.state_dict(), model, tokenizer, tmp_path / "model")


def test_the_projects_templates_pass(tmp_path: Path) -> None:
    check_chat_template(_folder(tmp_path, load_model(ModelConfig())[1].chat_template))
    check_chat_template(smollm2_folder())


@pytest.mark.parametrize(
    ("template", "message"),
    [(NO_END, "does not end an assistant turn with the end-of-sequence token '<|im_end|>'"),
     (NOT_A_PREFIX, "does not render the generation prompt as a prefix"),
     (BROKEN, "does not render a conversation"),
     (None, "has no chat template")],
)
def test_a_template_the_masks_cannot_use_is_refused(tmp_path: Path, template: str | None, message: str) -> None:
    tokenizer = load_model(ModelConfig())[1]
    tokenizer.chat_template = template
    with pytest.raises(TrainerConfigError, match=message):
        check_tokenizer_template(tokenizer, "the model")


@pytest.mark.parametrize("command", ["sft", "rl"])
def test_vf_train_refuses_it_with_exit_2_before_starting(tmp_path: Path, command: str) -> None:
    folder = _folder(tmp_path, NO_END)
    config = tmp_path / "run.toml"
    data = '[data]\nenv = "arithmetic"\n' if command == "sft" else '[env]\nid = "arithmetic"\n'
    config.write_text(f'output_dir = "{tmp_path / "out"}"\n[model]\npath = "{folder}"\n{data}')
    result = CliRunner().invoke(app, [command, str(config)])
    assert result.exit_code == 2, result.output
    assert "does not end an assistant turn with the end-of-sequence token" in result.output
    assert not (tmp_path / "out").exists()


def test_vf_train_serve_refuses_it_with_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", str(_folder(tmp_path, NO_END))])
    assert result.exit_code == 2 and "end-of-sequence token" in result.output
