"""The run secret: the one credential every control path of a run asks for.

The weight routes of an inference server change the model it serves; whoever can reach them decides what a run
trains on. They therefore answer only a bearer token that is the run secret (``VF_RUN_SECRET``) or one of
vLLM's API keys, and with neither configured they are closed. The process that starts a run's servers makes
the secret (:func:`ensure_run_secret`) before it starts them, so the servers, the orchestrator and every
process they start inherit it; servers on other machines get it from the job's environment (the Slurm script
exports one per job), and a server started alone (``vf-train serve``) needs it set by hand to be trained.

>>> import os
>>> os.environ.pop(RUN_SECRET_VAR, None) and None
>>> secret = ensure_run_secret()
>>> run_secret() == secret and len(secret) >= 43
True
"""

from __future__ import annotations

import os
import secrets

RUN_SECRET_VAR = "VF_RUN_SECRET"


def run_secret() -> str | None:
    """The run secret of this process's environment, if one is set (an empty value is none)."""
    return os.environ.get(RUN_SECRET_VAR) or None


def ensure_run_secret() -> str:
    """The run secret, made now (32 random bytes) and put in this process's environment if none is set, so the
    servers and clients this process starts share it."""
    secret = run_secret()
    if secret is None:
        secret = os.environ[RUN_SECRET_VAR] = secrets.token_urlsafe(32)
    return secret


__all__ = ["RUN_SECRET_VAR", "ensure_run_secret", "run_secret"]
