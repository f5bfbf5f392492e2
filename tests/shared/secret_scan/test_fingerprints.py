"""Fingerprints name a value for the allow list without revealing it: keyed, exact, one shape."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from safeport.shared.secret_scan import KEY_BYTES, fingerprint, is_fingerprint

KEY = bytes(range(KEY_BYTES))
OTHER_KEY = bytes(reversed(range(KEY_BYTES)))
VALUE = "Xk9fQ2mLp7Wz4Rt8Vb3N"


def test_a_fingerprint_has_one_written_shape_and_is_recognised() -> None:
    mark = fingerprint(VALUE, KEY)
    assert mark.startswith("fp1:") and len(mark) == 4 + 64
    assert is_fingerprint(mark)
    for bad in ("", VALUE, mark.upper(), mark[:-1], mark + "0", "fp2:" + mark[4:], f" {mark}"):
        assert not is_fingerprint(bad)


def test_the_same_value_under_another_key_has_another_fingerprint() -> None:
    # Keyed: without this machine's key, a fingerprint confirms no guess of the value.
    assert fingerprint(VALUE, KEY) != fingerprint(VALUE, OTHER_KEY)
    assert fingerprint(VALUE, KEY)[4:] != hashlib.sha256(VALUE.encode()).hexdigest()


def test_a_key_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        fingerprint(VALUE, b"short")


@given(st.text(min_size=8, max_size=40), st.integers(min_value=0, max_value=39))
def test_a_value_one_character_away_never_shares_a_fingerprint(value: str, at: int) -> None:
    at %= len(value)
    other = value[:at] + ("a" if value[at] != "a" else "b") + value[at + 1 :]
    assert fingerprint(value, KEY) != fingerprint(other, KEY)


@given(st.text(min_size=8, max_size=40))
def test_a_fingerprint_holds_no_piece_of_its_value(value: str) -> None:
    mark = fingerprint(value, KEY)
    assert is_fingerprint(mark)
    pieces = {value[i : i + 8] for i in range(len(value) - 7)}
    assert not any(p in mark for p in pieces if not set(p) <= set("0123456789abcdef"))
