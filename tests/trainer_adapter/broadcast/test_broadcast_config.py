"""The ``broadcast`` config table: relays as http(s) URLs, bounds on every number."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainer_adapter.broadcast.config import BroadcastConfig


def test_defaults_mean_the_shared_folder_and_relays_are_normalised() -> None:
    assert not BroadcastConfig().enabled
    config = BroadcastConfig(relays=["http://10.0.0.5:8101", "https://relay.example/"])
    assert config.enabled and config.relays == ["http://10.0.0.5:8101/", "https://relay.example/"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"relays": ["10.0.0.5:8101"]}, "is not an http:// or https:// URL with a host"),
        ({"relays": ["ftp://relay/"]}, "is not an http:// or https:// URL"),
        ({"relays": ["http://a/", "http://a/"]}, "listed twice"),
        ({"keep_versions": 0}, "keep_versions"),
        ({"shard_bytes": 10}, "shard_bytes"),
        ({"exploration": 2}, "exploration"),
        ({"poll_interval_s": 0}, "poll_interval_s"),
        ({"relay": ["http://a/"]}, "Extra inputs are not permitted"),
    ],
)
def test_bad_values_are_refused_with_the_field_named(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        BroadcastConfig(**fields)
