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


# A key commented out or quoted keeps a gutter before every line: a comment leader, a Markdown
# quote, a diff's removed-line mark, a shell line around each piece. Each is still a key.
GUTTERS = {
    "hash-comment": ("# ", ""),
    "bare-hash": ("#", ""),
    "markdown-quote": ("> ", ""),
    "ini-comment": ("; ", ""),
    "sql-comment": ("-- ", ""),
    "c-block-comment": (" * ", ""),
    "diff-removed": ("-", ""),
    "diff-added": ("+", ""),
    "shell-echo": ('echo "', '" >> id_rsa'),
}


@pytest.mark.parametrize("gutter", list(GUTTERS), ids=list(GUTTERS))
@pytest.mark.parametrize("ended", [True, False], ids=["whole", "truncated"])
def test_a_key_behind_a_gutter_on_every_line_is_withheld(gutter: str, ended: bool) -> None:
    sample = next(s for s in SAMPLES if s.category == "private-key:pkcs8")
    before, after = GUTTERS[gutter]
    all_lines = sample.text.split("\n")
    first = next(i for i, line in enumerate(all_lines) if "BEGIN" in line)
    last = next(i for i, line in enumerate(all_lines) if "END" in line)
    lines = all_lines[first : last + 1]
    if not ended:
        lines = lines[:-1]
    text = "(intro)\n" + "\n".join(before + line + after for line in lines) + "\n(outro)\n"
    redacted, findings = redact(text)
    body = [line for line in lines if not line.startswith("-----")]
    assert [line for line in body if line[:16] in redacted] == []
    assert [f.kind for f in findings] == ["private-key"]
    assert redacted.split("\n")[0] == "(intro)" and redacted.split("\n")[-2] == "(outro)"
    assert redacted.count("\n") == text.count("\n")


@pytest.mark.parametrize("separator", ["<br>", "<br/>", "&#10;", "&#13;&#10;"])
def test_a_key_whose_line_breaks_are_markup_is_withheld(separator: str) -> None:
    sample = next(s for s in SAMPLES if s.category == "private-key:pkcs8")
    block = sample.text[sample.text.index("-----BEGIN") : sample.text.index("\n\nnext")]
    text = "<p>" + separator.join(block.split("\n")) + "</p>\n"
    redacted, findings = redact(text)
    assert (sample.secret or "")[:16] not in redacted
    assert [f.kind for f in findings] == ["private-key"]


def test_comment_lines_about_a_key_marker_are_not_a_key() -> None:
    code = (
        "# -----BEGIN RSA PRIVATE KEY-----\n"
        "# is what the file starts with; see the docs for the rest.\n"
        "# -----END RSA PRIVATE KEY-----\n"
    )
    assert redact(code) == (code, ())
