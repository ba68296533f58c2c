"""The check image's requirement closure: what the SDK needs at run time, extras named by a requirement included."""

from __future__ import annotations

import importlib.metadata as md

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hub_server.worker.image import requirement_closure


def test_the_closure_follows_the_extras_the_sdk_names() -> None:
    names = {canonicalize_name(d.metadata["Name"]) for d in requirement_closure()}
    assert {"verifiers", "pip", "openai"} <= names
    # every extra the SDK asks of a dependency brings that extra's own requirements (openai[aiohttp] -> aiohttp)
    for line in md.distribution("verifiers").requires or []:
        requirement = Requirement(line)
        if requirement.marker is not None or not requirement.extras:
            continue
        for dep in md.distribution(requirement.name).requires or []:
            needed = Requirement(dep)
            if needed.marker is not None and any(needed.marker.evaluate({"extra": e}) for e in requirement.extras):
                assert canonicalize_name(needed.name) in names, (requirement, needed)
    assert "aiohttp" in names  # the model client's transport, without which the SDK does not import
