"""Range parsing for streamed blobs: single ranges honoured, the rest served whole, past-the-end refused."""

from __future__ import annotations

import pytest

from hub_server.api.blob_response import parse_range


@pytest.mark.parametrize(("header", "expected"), [
    (None, None),
    ("", None),
    ("bytes=0-99", (0, 99)),
    ("bytes=10-", (10, 999)),
    ("bytes=-100", (900, 999)),
    ("bytes=-5000", (0, 999)),  # a suffix longer than the blob: all of it
    ("bytes=990-5000", (990, 999)),  # clipped to the end
    ("bytes = 1-2", (1, 2)),
    ("bytes=0-1,5-6", None),  # several ranges: the whole blob (allowed, and no client of ours asks)
    ("items=0-1", None),
    ("bytes=-", None),
    ("bytes=a-b", None),
])
def test_ranges(header: str | None, expected: tuple[int, int] | None) -> None:
    assert parse_range(header, 1000) == expected


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=5-4", "bytes=-0"])
def test_unsatisfiable_ranges(header: str) -> None:
    with pytest.raises(ValueError):
        parse_range(header, 1000)
