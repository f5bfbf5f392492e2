"""A large text's answer is remembered by the digest of its bytes, never by anything weaker:
the same bytes give the same spans, and bytes that differ anywhere are scanned afresh."""

from __future__ import annotations

import secrets
import string

import pytest

from safeport.shared.secret_scan import find_secrets
from safeport.shared.secret_scan.scanner import REMEMBER_FROM_CHARS, REMEMBERED_TEXTS, scan_text

ALPHABET = string.ascii_letters + string.digits


def _token() -> str:
    return "ghp_" + "".join(secrets.choice(ALPHABET) for _ in range(36))


def _clean(size: int) -> str:
    line = "def handler(request):  # returns the response for one request\n"
    return (line * (size // len(line) + 1))[:size]


def test_a_remembered_clean_text_does_not_hide_a_secret_in_a_text_of_the_same_length() -> None:
    clean = _clean(REMEMBER_FROM_CHARS * 4)
    assert find_secrets(clean) == [] and find_secrets(clean) == []  # the second from memory
    token = _token()
    piece = f" {token} "  # between separators, as a token sits in text
    for at in (0, len(clean) // 2, len(clean) - len(piece) - 1):
        edited = clean[:at] + piece + clean[at + len(piece) :]
        assert len(edited) == len(clean)
        spans = find_secrets(edited)
        assert [edited[s.start : s.end] for s in spans] == [token]


def test_the_same_bytes_give_the_same_spans_and_a_caller_cannot_change_what_is_remembered() -> None:
    token = _token()
    text = _clean(REMEMBER_FROM_CHARS) + f"\nGITHUB = '{token}'\n"
    first = find_secrets(text)
    first.clear()  # a caller editing its list changes nothing remembered
    again = find_secrets(text)
    assert again == scan_text(text) and [text[s.start : s.end] for s in again] == [token]


def test_memory_is_bounded_and_small_texts_are_never_remembered() -> None:
    from safeport.shared.secret_scan import scanner

    for number in range(REMEMBERED_TEXTS + 20):
        find_secrets(f"# {number}\n" + _clean(REMEMBER_FROM_CHARS))
    assert len(scanner._recent) == REMEMBERED_TEXTS
    before = dict(scanner._recent)
    find_secrets("password = 'Zr8Kq2Wm5Xv9Lp3T'\n")
    assert dict(scanner._recent) == before


def test_where_blake3_is_missing_sha256_keys_the_memory_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from safeport.shared.secret_scan import scanner

    monkeypatch.setattr(scanner, "_digest", scanner._sha256)
    monkeypatch.setattr(scanner, "_recent", type(scanner._recent)())
    clean = _clean(REMEMBER_FROM_CHARS * 2)
    assert find_secrets(clean) == [] and len(scanner._recent) == 1
    token = _token()
    edited = clean[:-60] + f" {token} " + clean[-19:]
    assert [edited[s.start : s.end] for s in find_secrets(edited)] == [token]
    assert len(scanner._recent) == 2 and all(len(key) == 32 for key in scanner._recent)
