"""Token strings: random, parseable, only a hash stored, compared in constant time."""

from __future__ import annotations

from hub_server.auth.tokens import hash_secret, new_token, parse_token, secret_matches


def test_tokens_round_trip_and_differ() -> None:
    a, b = new_token(), new_token()
    assert a != b
    assert parse_token(str(a)) == a
    assert str(a).startswith("vfh_") and len(str(a)) == 4 + 12 + 1 + 43


def test_malformed_tokens_do_not_parse() -> None:
    good = str(new_token())
    for bad in ["", "vfh_", good[:-1], good + "x", good.replace("vfh_", "pypi-"), "vfh_zzzzzzzzzzzz_" + "a" * 43]:
        assert parse_token(bad) is None


def test_only_the_hash_matches() -> None:
    token = new_token()
    stored = hash_secret(token.secret)
    assert token.secret not in stored
    assert secret_matches(token.secret, stored)
    assert not secret_matches(new_token().secret, stored)
