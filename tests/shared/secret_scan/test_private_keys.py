"""Private keys in every form they are pasted in: PEM, PKCS#8, encrypted, OpenSSH, JSON-escaped
inside a service-account file, indented under a YAML key."""

from __future__ import annotations

import pytest

from benchmarks.secret_corpus.corpus import private_key_samples
from safeport.shared.secret_scan import redact

SAMPLES = list(private_key_samples())


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.category for s in SAMPLES])
def test_every_private_key_form_is_withheld_with_its_lines_kept(sample: object) -> None:
    from benchmarks.secret_corpus.corpus import Sample

    assert isinstance(sample, Sample) and sample.secret is not None
    redacted, findings = redact(sample.text)
    assert sample.secret not in redacted
    assert "PRIVATE KEY" not in redacted
    assert [f.kind for f in findings] == ["private-key"]
    assert redacted.count("\n") == sample.text.count("\n")
    # The lines around the block are served byte for byte.
    original, after = sample.text.split("\n"), redacted.split("\n")
    assert original[0] == after[0] or "private_key" in original[0]
    assert original[-2] == after[-2] or "private_key" in original[-2]


def test_yaml_indentation_survives_redaction() -> None:
    sample = next(s for s in SAMPLES if s.category.endswith("-yaml"))
    redacted, _ = redact(sample.text)
    for line in redacted.splitlines()[2:-1]:
        assert line == "    [REDACTED:private-key]"


def test_a_parser_quoting_the_begin_marker_is_not_a_key() -> None:
    code = (
        'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n'
        "    start = index\n"
        'elif line.startswith("-----END RSA PRIVATE KEY-----"):\n'
        "    end = index\n"
    )
    assert redact(code) == (code, ())


def test_a_public_key_and_a_certificate_are_left_alone() -> None:
    sample = next(s for s in SAMPLES if s.category == "private-key:pkcs8")
    body = sample.secret or ""
    text = f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n"
    text += f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    assert redact(text) == (text, ())
