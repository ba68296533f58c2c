"""Settings fields added for hardening: their accepted forms and the errors bad values get."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hub_server import Settings


def test_forwarded_allow_ips_takes_addresses_and_networks_comma_separated(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(data_dir=tmp_path).forwarded_allow_ips == []  # default: trust no proxy
    monkeypatch.setenv("VF_HUB_FORWARDED_ALLOW_IPS", "127.0.0.1, 10.0.0.0/8,::1")
    assert Settings(data_dir=tmp_path).forwarded_allow_ips == ["127.0.0.1/32", "10.0.0.0/8", "::1/128"]


@pytest.mark.parametrize("entry", ["*", "proxy.internal", "10.0.0.0/33", "300.1.1.1"])
def test_forwarded_allow_ips_refuses_what_is_not_an_address(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ValidationError, match="is not an IP address or network"):
        Settings(data_dir=tmp_path, forwarded_allow_ips=["127.0.0.1", entry])


@pytest.mark.parametrize("value", [0, -1])
def test_max_sdist_unpacked_size_must_be_positive(tmp_path: Path, value: int) -> None:
    with pytest.raises(ValidationError, match="max_sdist_unpacked_size"):
        Settings(data_dir=tmp_path, max_sdist_unpacked_size=value)
