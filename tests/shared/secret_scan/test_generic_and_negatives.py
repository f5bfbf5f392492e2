"""Generic assignments (best effort, at least 90 % of the corpus) and the look-alikes that must
read unchanged: hashes, UUIDs, lock files, public keys, placeholders, environment lookups."""

from __future__ import annotations

import pytest

from benchmarks.secret_corpus.corpus import generic_samples, negative_samples
from safeport.shared.secret_scan import find_secrets, redact
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret, fresh

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


@pytest.mark.parametrize(
    "template",
    [
        'public_key = "{value}"\n',
        "STRIPE_PUBLISHABLE_KEY={value}\n",
        'vapidPublicKey = "{value}"\n',
        "ssh_pub_key: {value}\n",
    ],
)
def test_a_key_named_as_published_is_served(template: str) -> None:
    assert_clean(template.format(value=fresh()))


@pytest.mark.parametrize(
    "template",
    [
        'public_key_secret = "{value}"\n',
        "NEXT_PUBLIC_SECRET_KEY={value}\n",
        # a secret put under a browser-exposed prefix by mistake
        "NEXT_PUBLIC_API_KEY={value}\n",
        "EXPO_PUBLIC_API_KEY={value}\n",
        "NEXT_PUBLIC_SUPABASE_SERVICE_ROLE_KEY={value}\n",
        "PUBLIC_SIGNING_KEY={value}\n",
        "PUB_DEV_TOKEN={value}\n",
        'public_api_token = "{value}"\n',
        'plaid_public_token = "{value}"\n',
        'private_key_public_copy_password = "{value}"\n',
        'publisher_key = "{value}"\n',
    ],
)
def test_a_private_name_beside_a_published_word_is_withheld(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # Chosen secrets holding a run, a date, a version or dots are judged as any value.
        ('password = "Winter12345678!"\n', "Winter12345678!"),
        ('SECRET_KEY = "Acme12345678!"\n', "Acme12345678!"),
        ("DB_PASSWORD=Anna15.03.1987\n", "Anna15.03.1987"),
        ('JWT_SECRET="Acme-2024.01.15"\n', "Acme-2024.01.15"),
        ('client_secret="Xy7@1.2.3"\n', "Xy7@1.2.3"),
        ("SECRET_KEY=Kx9Lq2mZpW8vR3tY-v2.4.1\n", "Kx9Lq2mZpW8vR3tY-v2.4.1"),
        ('JWT_SECRET="blue.monkey7.river"\n', "blue.monkey7.river"),
        ('API_KEY="Xk9pQ2mN5678901234"\n', "Xk9pQ2mN5678901234"),
        ('api_key = "k3j9x2.m8q4z7.p1w6r5"\n', "k3j9x2.m8q4z7.p1w6r5"),
    ],
)
def test_chosen_secrets_that_hold_a_run_a_date_or_dots_are_withheld(text: str, secret: str) -> None:
    assert [text[s.start : s.end] for s in find_secrets(text)] == [secret]


def test_a_long_dotted_value_under_a_secret_name_is_judged_at_once() -> None:
    # Forty dotted words and a closing pair of digits, judged in time linear in its length.
    value = ".".join("bcdfgh"[k % 6 :] + "kmnpqrst"[: k % 8] for k in range(40)) + "99"
    text = f'API_KEY="{value}"\n'
    assert [text[s.start : s.end] for s in find_secrets(text)] in ([], [value])
