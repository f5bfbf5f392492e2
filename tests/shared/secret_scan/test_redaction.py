"""Redaction keeps line structure, names the kind, reports lines, never the value, and stays
linear on hostile input."""

from __future__ import annotations

import time

import pytest

from benchmarks.secret_corpus.tokens import TOKENS
from safeport.shared.secret_scan import Finding, find_secrets, redact
from safeport.shared.secret_scan.spans import SecretSpan, every_copy


def test_lines_beside_a_secret_are_byte_for_byte_and_the_count_is_kept() -> None:
    token = TOKENS["stripe-live"]()
    text = "first line\r\n\tsecond: kept\nSTRIPE = '" + token + "'  # trailing\nlast"
    redacted, findings = redact(text)
    assert redacted.split("\n")[:2] == text.split("\n")[:2]
    assert redacted.split("\n")[3] == "last"
    assert redacted.split("\n")[2] == "STRIPE = '[REDACTED:stripe-key]'  # trailing"
    assert findings == (Finding("stripe-key", 3, 3),)


def test_findings_name_lines_and_kinds_and_redaction_is_idempotent() -> None:
    text = "\n".join(
        [
            f"a = '{TOKENS['github-classic']()}'",
            "nothing here",
            f"b: {TOKENS['npm']()}",
        ]
    )
    redacted, findings = redact(text)
    assert [(f.kind, f.line) for f in findings] == [("github-token", 1), ("npm-token", 3)]
    assert redact(redacted) == (redacted, ())


def test_clean_text_comes_back_as_the_same_object() -> None:
    text = "def f(x):\n    return x + 1\n"
    redacted, findings = redact(text)
    assert redacted is text and findings == ()


def test_a_one_megabyte_line_of_near_misses_scans_in_linear_time() -> None:
    near_misses = [
        "ghp_" * 250_000,
        "eyJ" * 330_000,
        "password=" * 110_000,
        "-----BEGIN PRIVATE KEY-----" * 37_000,
        "sk-" + "a" * 1_000_000,
        "://a:" * 200_000,
        "AKIA" * 250_000,
        ("glpat-" + "x" * 19) * 40_000,
        "token: " + "Ab1" * 330_000,
    ]
    for line in near_misses:
        started = time.perf_counter()
        redacted, _ = redact(line)
        assert time.perf_counter() - started < 10, line[:20]
        assert "\n" not in redacted


def test_a_long_line_of_key_markers_is_scanned_without_reading_the_line_at_each_marker() -> None:
    # Reading the whole line around each marker made this quadratic: 4 MB took half a minute.
    line = "-----BEGIN PRIVATE KEY-----" * 150_000
    started = time.perf_counter()
    redacted, findings = redact(line)
    assert time.perf_counter() - started < 10
    assert findings == () and redacted == line


def test_a_huge_file_with_one_secret_in_the_middle() -> None:
    token = TOKENS["huggingface"]()
    text = "x = 1\n" * 200_000 + f"HF_TOKEN={token}\n" + "y = 2\n" * 200_000
    redacted, findings = redact(text)
    assert token not in redacted and findings == (Finding("huggingface-token", 200_001, 200_001),)


def test_text_holding_a_lone_surrogate_is_scanned_not_refused() -> None:
    # Bytes that were not UTF-8, decoded with surrogateescape, still get their secrets found.
    token = "ghp_" + "a1B2" * 9
    text = f"x \udc80 y\ntoken = {token}\n"
    redacted, findings = redact(text)
    assert token not in redacted and "\udc80" in redacted
    assert [finding.line for finding in findings] == [2]


def test_copies_of_a_long_value_that_repeats_itself_are_found_in_one_pass() -> None:
    # A value the rules withheld whole, half a megabyte of one short piece repeated: the
    # automaton that looks for its copies is built in time linear in the value (a deterministic
    # one took the square of its length, minutes at this size, past the suite's timeout).
    text = "xoxe-1-a" * 65_536
    spans = every_copy(text + " " + text[:64], [SecretSpan(0, len(text), "slack-token")])
    assert spans[0] == SecretSpan(0, len(text), "slack-token")


@pytest.mark.parametrize("piece", ["xoxe-1-a", "xoxb-1-", "xoxe.xoxp-1-a", "xoxb-123456-"])
def test_a_megabyte_of_slack_prefixes_glued_together_is_judged_at_once(piece: str) -> None:
    # Each prefix's look reads letters and digits only, and stops at the next one's dash.
    text = piece * (1_000_000 // len(piece))
    assert find_secrets(text) == []
