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
        "publicToken: '{value}'\n",
        "STRIPE_PUBLISHABLE_KEY={value}\n",
        'vapidPublicKey = "{value}"\n',
        'const publicApiKey = "{value}";\n',
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
        "NEXT_PUBLIC_SUPABASE_SERVICE_ROLE_KEY={value}\n",
        "PUBLIC_SIGNING_KEY={value}\n",
        "PUB_DEV_TOKEN={value}\n",
        "PUB_TOKEN={value}\n",
        'public_repo_token = "{value}"\n',
        'private_key_public_copy_password = "{value}"\n',
        'publisher_key = "{value}"\n',
    ],
)
def test_a_private_name_beside_a_published_word_is_withheld(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "event-bus-message-api:release-0.15.0-SNAPSHOT\n",
        'notes = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"\n',
        'api_version = "v2.14.1-beta3"\n',
        '<entry key="jetbrains.mps.v8_elimination" value="executed" />\n',
        "secret_store = config.vault.kv2_backend\n",
    ],
)
def test_versions_and_dotted_names_under_secret_words_are_served(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "line",
    [
        "DATABRICKS_TOKEN=dapi123456789012345678a9bc01234defg5\n",
        "LANGCHAIN_API_KEY=ls__0123456789abcdef0123456789abcdef\n",
        'const SERVICE_KEY = "12345678-ABCD-ABCD-ABCD-1234567890AB"\n',
        'api_token = "zyxwvutsrq9876543210"\n',
        'resendApiKey := "re_8f3kq2mz_aBcDeFgHiJkLmNoPqRsTuVwX"\n',
    ],
)
def test_values_typed_in_runs_to_show_a_shape_are_served(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # People choose such values: the run test wants ten, the version test a version beside
        # nothing drawn, and neither judges a password's name.
        ('password = "Winter12345678!"\n', "Winter12345678!"),
        ('SECRET_KEY = "Acme12345678!"\n', "Acme12345678!"),
        ("DB_PASSWORD=Anna15.03.1987\n", "Anna15.03.1987"),
        ('api_secret = "Anna15.03.1987"\n', "Anna15.03.1987"),
        ("SECRET_KEY=Kx9Lq2mZpW8vR3tY-v2.4.1\n", "Kx9Lq2mZpW8vR3tY-v2.4.1"),
        ('password = "unranked.fidgety7.reenter.gumball"\n', "unranked.fidgety7.reenter.gumball"),
        ('api_key = "k3j9x2.m8q4z7.p1w6r5"\n', "k3j9x2.m8q4z7.p1w6r5"),
    ],
)
def test_chosen_secrets_that_hold_a_run_a_date_or_dots_are_withheld(text: str, secret: str) -> None:
    assert [text[s.start : s.end] for s in find_secrets(text)] == [secret]


def test_a_long_dotted_value_that_is_no_settings_name_is_judged_at_once() -> None:
    # Forty dotted words and a closing pair of digits: the name's pattern fails to match, and
    # must fail without trying each way of splitting every word (the suite's timeout would
    # end a try that grows with the words' count).
    value = ".".join("bcdfgh"[k % 6 :] + "kmnpqrst"[: k % 8] for k in range(40)) + "99"
    text = f'API_KEY="{value}"\n'
    assert [text[s.start : s.end] for s in find_secrets(text)] in ([], [value])
