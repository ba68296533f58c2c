"""Model folders for inference tests: the trainer's tiny model, saved as vLLM loads it, and seeded variants.

Nothing is downloaded. The model is the trainer's own tiny Llama (``trainer_adapter.model``: 2 layers, 128
wide, grouped-query attention, SwiGLU, tied embeddings, the byte-level tokenizer whose ids equal
``verifiers.testing.ByteTokenizer``'s), written by the trainer's own exporter, so what the tests serve is
exactly what the trainer hands to inference::

    base = save_tiny_model("/tmp/tiny")                  # config.json, model.safetensors, tokenizer, ...
    v1 = perturb_weights(base, "/tmp/tiny-v1", seed=1)   # the same model with other weights

It exercises every weight shape vLLM rewrites at load time: q/k/v fused into ``qkv_proj``, gate/up into
``gate_up_proj``, and the output head tied to the embedding. Run as a module it writes both folders, of
the tiny shape or of the model a main job config builds (``scripts/gpu_smoke.sh`` measures the ~100M one)::

    python -m trainer_adapter.inference.testing_model OUT_DIR [--variant-seed 1] [--main-job configs/main_job/gpu.toml]
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

WEIGHTS_FILE = "model.safetensors"


def save_tiny_model(path: str | Path, seed: int = 0, shape: dict[str, int] | None = None) -> Path:
    """Write the tiny model (or the Llama of ``shape``: :class:`~trainer_adapter.model.tiny.ModelConfig` fields)
    with seeded random weights (float32) as a Hugging Face folder; returns it."""
    from trainer_adapter.model.config import ModelConfig
    from trainer_adapter.model.tiny import load_model
    from trainer_adapter.train.export import write_hf_folder

    model, tokenizer = load_model(ModelConfig.model_validate({**(shape or {}), "seed": seed}))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_hf_folder(model.state_dict(), model, tokenizer, path)


def perturb_weights(src: str | Path, dst: str | Path, seed: int, scale: float = 0.5) -> Path:
    """Copy the model folder ``src`` to ``dst`` with every weight changed by seeded noise; returns ``dst``.

    Each tensor gets ``scale * max(std, 0.01) * N(0, 1)`` added, norm weights included, so every parameter,
    fused or tied, differs from the original; dtype, names and shapes stay as they were.
    """
    import torch
    from safetensors.torch import load_file, save_file

    src, dst = Path(src), Path(dst)
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    generator = torch.Generator().manual_seed(seed)
    changed: dict[str, torch.Tensor] = {}
    for name, tensor in sorted(load_file(src / WEIGHTS_FILE).items()):
        values = tensor.float()
        spread = max(float(values.std()) if values.numel() > 1 else 0.0, 1e-2)
        noise = torch.randn(values.shape, generator=generator) * scale * spread
        changed[name] = (values + noise).to(tensor.dtype).contiguous()
    save_file(changed, str(dst / WEIGHTS_FILE), metadata={"format": "pt"})
    return dst


def main(
    out: Annotated[Path, typer.Argument(help="Folder to write base/ and variant/ into.")],
    seed: Annotated[int, typer.Option(help="Seed of the base weights.")] = 0,
    variant_seed: Annotated[int, typer.Option(help="Seed of the noise added for variant/.")] = 1,
    main_job: Annotated[Path | None, typer.Option(help="A main job config: build the model its SFT builds.")] = None,
) -> None:
    """Write OUT/base (the tiny model, or a main job's) and OUT/variant (its perturbed copy)."""
    shape = None
    if main_job is not None:
        from trainer_adapter.config import load_config
        from trainer_adapter.main_job_config import MainJobConfig

        shape = load_config(MainJobConfig, main_job).sft.model_shape(seed)
    base = save_tiny_model(out / "base", seed=seed, shape=shape)
    perturb_weights(base, out / "variant", seed=variant_seed)
    typer.echo(out)


if __name__ == "__main__":
    typer.run(main)
