"""Every provider format, with fresh random bodies, is found wherever it sits."""

from __future__ import annotations

import random
import string

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


# Characters a reader (or a model) drops without noticing: zero-width spaces and joiners, a soft
# hyphen, a byte-order mark or combining mark mid-line, the NULs of UTF-16 text read as UTF-8,
# and JSON's optional escaping of "/" (PHP writes every "/" as "\/").
HIDERS = {
    "zero-width-space": "\u200b",
    "zero-width-joiner": "\u200d",
    "soft-hyphen": "\u00ad",
    "byte-order-mark": "\ufeff",
    "word-joiner": "\u2060",
    "combining-acute": "\u0301",
    "nul": "\x00",
}


def _strip_hiders(text: str) -> str:
    for hider in HIDERS.values():
        text = text.replace(hider, "")
    return text.replace("\\/", "/")


@pytest.mark.parametrize("hider", list(HIDERS), ids=list(HIDERS))
@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_token_split_by_a_character_that_shows_as_nothing_is_withheld(
    kind: str, hider: str
) -> None:
    secret = TOKENS[kind]()
    middle = len(secret) // 2
    hidden = secret[:middle] + HIDERS[hider] + secret[middle:]
    text = f"before = 1\nvalue = {hidden}\nafter = 2\n"
    redacted, findings = redact(text)
    assert secret[:6] + secret[6:middle] not in _strip_hiders(redacted)
    assert secret[middle:] not in _strip_hiders(redacted)
    assert findings
    assert redacted.split("\n")[0] == "before = 1" and redacted.split("\n")[2] == "after = 2"


def test_utf16_text_read_as_utf8_is_judged_without_its_nuls() -> None:
    secret = TOKENS["github-classic"]()
    text = "x = 1\n" + f'TOKEN = "{secret}"\n'.encode("utf-16-le").decode("utf-8") + "y = 2\n"
    redacted, findings = redact(text)
    assert [f.kind for f in findings] == ["github-token"]
    assert secret[4:20] not in redacted.replace("\x00", "")
    assert redacted.startswith("x = 1\n") and redacted.endswith("y = 2\n")


def test_a_json_escaped_slash_inside_a_token_does_not_hide_it() -> None:
    secret = TOKENS["azure-storage"]()
    escaped = secret.replace("/", "\\/")
    text = '{"Storage": "DefaultEndpointsProtocol=https;' + escaped + '"}\n'
    redacted, findings = redact(text)
    assert findings
    body = secret.split("AccountKey=", 1)[-1]
    assert not any(body[i : i + 12] in _strip_hiders(redacted) for i in range(len(body) - 12))


@pytest.mark.parametrize(
    "line",
    [
        'let path = "a\\/b\\/c"; // \u200b\n',
        "caf\u0301e = 'd\u00e9j\u00e0 vu'\n",
        '{"url": "https:\\/\\/example.com\\/api\\/v1\\/items"}\n',
    ],
)
def test_text_with_such_characters_and_no_secret_reads_unchanged(line: str) -> None:
    assert redact(line) == (line, ())


def test_a_generated_body_without_a_digit_is_still_a_token_and_camel_case_words_are_not() -> None:
    rng = random.Random(7)
    for _ in range(200):
        body = "".join(rng.choice(string.ascii_letters) for _ in range(34))
        if not 0.3 <= sum(c.isupper() for c in body) / 34 <= 0.7:
            continue  # outside what a random body shows in all but a few in a thousand
        text = f"HF = 'hf_{body}'\n"
        assert [text[s.start : s.end] for s in find_secrets(text)] == [f"hf_{body}"]
    for word in ("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", "hf_TransformersPipelineOutputs"):
        assert find_secrets(f"name = {word}\n") == []
