"""Every provider format, with fresh random bodies, is found wherever it sits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.secret_corpus.corpus import token_samples
from benchmarks.secret_corpus.tokens import TOKENS
from safeport.shared.secret_scan import find_secrets, redact


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_each_known_format_is_redacted_in_every_context(kind: str) -> None:
    for sample in token_samples():
        if sample.category == f"token:{kind}":
            redacted, findings = redact(sample.text)
            assert sample.secret is not None
            assert sample.secret not in redacted, sample.text
            assert findings and "[REDACTED:" in redacted


# Text around a secret: anything printable, ending and starting at a separator, as a token sits
# in real text (a token glued to the letters around it has no format left to recognise).
SEPARATORS = st.sampled_from([" ", "\n", '"', "'", "=", ": ", "(", ",", "\t", "`", "> "])
AROUND = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=200)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(TOKENS)),
    before=AROUND,
    left=SEPARATORS,
    right=SEPARATORS,
    after=AROUND,
)
def test_a_generated_secret_in_random_text_never_survives(
    kind: str, before: str, left: str, right: str, after: str
) -> None:
    secret = TOKENS[kind]()
    text = before + left + secret + right + after
    redacted, _ = redact(text)
    assert secret not in redacted
    assert redacted.count("\n") == text.count("\n")


def test_spans_carry_offsets_and_a_kind_never_the_value() -> None:
    token = TOKENS["github-classic"]()
    text = f'GITHUB_TOKEN = "{token}"\n'
    (span,) = find_secrets(text)
    assert text[span.start : span.end] == token
    assert span.kind == "github-token"
    assert token not in repr(span)


@pytest.mark.parametrize(
    "line",
    [
        "ATBB_PREFIX = 'ATBB'\n",  # the prefix alone
        "id = 'XATBB" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6'\n",  # glued to a word on its left
        "short = 'ATBB" + "a1B2c3D4e5F6g7H8i9J0'\n",  # too short for an app password
        "ticket BBDC-1234 was closed\n",  # an issue key in the same project prefix
        "body = 'BBDC-" + "A" * 50 + "'\n",  # longer than an access token
    ],
)
def test_bitbucket_look_alikes_are_left_alone(line: str) -> None:
    assert redact(line) == (line, ())
