"""Generic assignments (best effort, at least 90 % of the corpus) and the look-alikes that must
read unchanged: hashes, UUIDs, lock files, public keys, placeholders, environment lookups."""

from __future__ import annotations

import pytest

from benchmarks.secret_corpus.corpus import generic_samples, negative_samples
from safeport.shared.secret_scan import redact

NEGATIVES = list(negative_samples())


def test_at_least_ninety_percent_of_generic_assignments_are_redacted() -> None:
    samples = list(generic_samples()) * 3  # fresh values each round
    samples += list(generic_samples()) + list(generic_samples())
    withheld = sum(s.secret is not None and s.secret not in redact(s.text)[0] for s in samples)
    assert withheld / len(samples) >= 0.90


@pytest.mark.parametrize("sample", NEGATIVES, ids=[s.category for s in NEGATIVES])
def test_look_alikes_read_unchanged(sample: object) -> None:
    from benchmarks.secret_corpus.corpus import Sample

    assert isinstance(sample, Sample)
    assert redact(sample.text) == (sample.text, ())


@pytest.mark.parametrize(
    "line",
    [
        "token = self.tokenizer.encode(text)\n",
        "private_key: Ed25519PrivateKey,\n",
        "secret = self.x25519_key.exchange(peer)\n",
        'TOKEN_PATTERN = r"[A-Za-z0-9_]+"\n',
        'url = f"https://{user}:{password}@{host}/"\n',
        "auth = HTTPBasicAuth(user, password)\n",
        "    pass  # nothing to do\n",
        'password_hash = "pbkdf2_sha256$600000$abc$def"\n',
        "max_tokens = 4096\n",
        'SUBSCRIPTION_META_KEY = "io.example/subscriptionId"\n',
    ],
)
def test_ordinary_code_about_secrets_is_not_a_secret(line: str) -> None:
    assert redact(line) == (line, ())
