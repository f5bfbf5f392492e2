"""Value tests shared by the rules: is this literal random enough, or a placeholder, an
identifier, a path? Each is a small pure function of one string.

The thresholds were set on the labelled corpus of ``benchmarks/secret_corpus/`` (random
provider bodies, generated passwords, placeholders, hashes and the code of installed packages);
``benchmarks/bench_secret_scan.py`` measures what they buy.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
import string
from collections import Counter

# Words that mark a value as an example or a stand-in rather than a credential.
PLACEHOLDER_WORDS = (
    "example",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "your",
    "dummy",
    "fake",
    "redacted",
    "xxxx",
    "****",
    "....",
    "insert",
    "replace",
    "todo",
    "fixme",
    "secret_here",
    "here",
    "mypassword",
    "password",
    "passwd",
    "notasecret",
    "not_a_secret",
    "not-a-secret",
    "test",
    "secret",
)
_SHORT_VALUE = 64
_LONG_PLACEHOLDER_WORDS = tuple(word for word in PLACEHOLDER_WORDS if len(word) >= 6)
PLACEHOLDER_VALUES = frozenset(
    {
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "bytes",
        "string",
        "optional",
        "required",
        "secret",
        "token",
        "pass",
        "pw",
        "pwd",
        "user",
        "username",
        "admin",
        "root",
        "guest",
        "postgres",
        "mysql",
        "foo",
        "bar",
        "baz",
        "qwerty",
        "letmein",
    }
)
# Lookups and expressions, not literals: environment reads, templates, format fields, calls.
# A mark that only opens a reference when a name follows it to the end (``@VAR@``, ``@name``,
# YAML's ``*alias`` and ``&anchor``, a call ``get_pw()``), and a ``%s`` standing apart from
# letters and digits (``token_%s``, ``%s:%s``): a generated password starts with ``@``, ``*`` or
# ``&``, or holds ``%d`` or ``()`` between random characters, about one draw in ten.
INDIRECTION = re.compile(
    r"^(?:\$|%\(|\{|#\{|<)|\$\{|\{\{|%\(\w+\)|os\.environ|getenv|process\.env|"
    r"ENV\[|env\(|getpass|\{\}|\{\d\}|\{[A-Za-z_.]+\}|\\[xuUdwWsSbB]|\[[^\]]*\]|"
    r"^[@*&][A-Za-z_.\-]+@?$|^&#?\w+;|^@[({]|"
    r"(?-i:(?<![A-Za-z0-9])%[sdr](?![A-Za-z0-9]))|^[A-Za-z_][\w.]*\(\)(?:\.[\w.()]*)?$|"
    r"^%[A-Za-z_]\w{0,63}%$",  # a Windows variable: %DB_PASSWORD%
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*)?")
_WORDS = re.compile(r"[a-z]+(?:[-_. ][a-z]+)*|[A-Z]+(?:[-_.][A-Z]+)*")
_SEPARATED_WORDS = re.compile(r"[A-Za-z]+(?:[/._\-:@+][A-Za-z]+)+")
_SPACE = re.compile(r"\s")
_PATH = re.compile(r"^(?:/|\./|\.\./|~/|[A-Za-z]:\\|https?:|file:)")
_NUMBERISH = re.compile(r"[\d.,:_\-+eE ]+")
# Identifiers their providers publish by design, which a secret-like name still often holds
# (``POSTHOG_KEY = "phc_…"``): PostHog project keys (write-only, in every page's JavaScript),
# Stripe publishable keys, Supabase publishable keys, Salesforce org ids and connected-app
# consumer keys, NATS public keys (56 characters; a seed is 58 and starts with S). The secrets
# beside them have formats of their own (``phx_``, ``sk_live_``, ``sb_secret_``, ``00D…!…``,
# ``SU…``) and are withheld by those.
PUBLIC_IDENTIFIER = re.compile(
    r"phc_[A-Za-z0-9]{30,60}|pk_(?:live|test)_[A-Za-z0-9]{16,247}|sb_publishable_[\w\-]{20,80}"
    r"|00D[A-Za-z0-9]{12}(?:[A-Za-z0-9]{3})?|3MVG9[A-Za-z0-9._]{60,120}|[UAONCX][A-Z2-7]{55}"
)


def shannon_bits(value: str) -> float:
    """Shannon entropy of ``value``'s characters, in bits per character."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())


def character_classes(value: str) -> int:
    """How many of lower, upper, digit and other characters ``value`` uses."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def is_placeholder(value: str) -> bool:
    """A stand-in (``<YOUR_KEY>``, ``${TOKEN}``, ``xxxx``, ``changeme``) or a lookup, not a
    credential."""
    lowered = value.lower()
    if lowered in PLACEHOLDER_VALUES or "redacted" in lowered:
        return True
    if INDIRECTION.search(value):
        return True
    if len(set(lowered)) <= 3:
        return True
    if len(value) <= _SHORT_VALUE:
        return any(word in lowered for word in PLACEHOLDER_WORDS)
    # A long generated value holds a four-letter word ("your", "test", "here") in any spelling
    # once in a few thousand draws, by chance: in one that long only the longer words (and a
    # longer run of x's) mark a stand-in.
    return "xxxxxxxx" in lowered or any(word in lowered for word in _LONG_PLACEHOLDER_WORDS)


_SMALL_RUN = re.compile(r"[a-z]+")
_VOWEL = re.compile(r"[aeiouy]")


def _generated_after_all(value: str) -> bool:
    """Whether a value that starts like a path is generated all the same: paths are words,
    mostly small letters, and words hold vowels; base64 (which starts with ``/`` one time in 64,
    and may hold more) is about half capitals at high entropy, switching case every other
    letter, and 42 of its 52 letters are consonants. Capitals and digits alone passed one draw
    in three hundred as a path (few capitals, or no digit); vowels and case switches tell the
    two apart, all but about one draw in thirty thousand."""
    body = value.lstrip("/.~")
    letters = [c for c in body if c.isalpha()]
    if len(body) < 24 or len(letters) < 12 or shannon_bits(body) < 4.0:
        return False
    capitals = sum(c.isupper() for c in letters) / len(letters)
    if capitals >= 0.25 and any(c.isdigit() for c in body):
        return True
    if not 0.1 <= capitals <= 0.9:
        return False  # one case throughout: a folder of words, or a lowercase hash a store names
    runs = _SMALL_RUN.findall(body)
    vowels = sum(c in "aeiouAEIOU" for c in letters) / len(letters)
    spoken = all(_VOWEL.search(run) for run in runs if len(run) >= 3)
    # Words switch case at their starts (``SystemRootCertificates``); a draw, every other letter.
    switches = sum(a.isupper() != b.isupper() for a, b in itertools.pairwise(letters))
    return not (vowels >= 0.28 and spoken and switches < 0.3 * len(letters))


def looks_random(value: str, *, quoted: bool) -> bool:
    """A literal that could be a generated secret: long enough, varied enough, and neither an
    identifier, a path, a number, a sentence nor a placeholder. Unquoted values (``.env``, YAML,
    INI) must hold a digit, since an unquoted word in code is a variable."""
    if not 8 <= len(value) <= 512 or _SPACE.search(value):
        return False
    # An identifier without a digit ("_hypothesis_stats", most values under a secret-like name
    # in code) is refused by the identifier's check below, whatever the checks before it say;
    # it is asked first, since the placeholder's look costs several times as much. A quoted
    # run of letters alone goes on to be judged by its capitals.
    if (
        (not quoted or not value.isalpha())
        and _IDENTIFIER.fullmatch(value)
        and not any(map(str.isdigit, value))
    ):
        return False
    if is_placeholder(value) or _NUMBERISH.fullmatch(value):
        return False
    if _PATH.match(value) and not _generated_after_all(value):
        return False
    if PUBLIC_IDENTIFIER.fullmatch(value):
        return False
    if _WORDS.fullmatch(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    if not has_digit and _SEPARATED_WORDS.fullmatch(value):
        return False  # paths, dotted names, media types: "io.example/clientInfo"
    if not has_digit and _IDENTIFIER.fullmatch(value):
        if not quoted or not value.isalpha():
            return False
        # Letters only: a camelCase name has a few capitals, a random string about half.
        upper = sum(c.isupper() for c in value) / len(value)
        return len(value) >= 12 and 0.25 <= upper <= 0.75 and shannon_bits(value) >= 3.3
    if not quoted and not has_digit:
        return False
    if character_classes(value) < 2:
        return False
    return shannon_bits(value) >= (2.8 if len(value) < 16 else 3.0)


_LETTERS_AND_MARKS = re.compile(r"[A-Za-z!#%^&*+=~@._\-]{12,128}")


def generated_letters(value: str) -> bool:
    """An unquoted value of letters (and a few marks) alone that a generator drew with digits
    turned off: long, of both cases, the case switching between neighbours, and not words run
    together. An identifier (``getPasswordFromVault``, ``ServerErrorHandler``) is long runs of
    small letters holding vowels, where a draw's runs are short and mostly consonants (42 of 52
    letters are). Asked only under a name that means nothing but a password."""
    if not _LETTERS_AND_MARKS.fullmatch(value) or is_placeholder(value):
        return False
    letters = "".join(c for c in value if c.isalpha())
    if len(letters) < 12:
        return False
    upper = sum(c.isupper() for c in letters) / len(letters)
    switches = sum(a.isupper() != b.isupper() for a, b in itertools.pairwise(letters))
    runs = _SMALL_RUN.findall(letters)
    run_length = sum(map(len, runs)) / max(1, len(runs))
    vowels = sum(c in "aeiouAEIOU" for c in letters) / len(letters)
    # Words hold a vowel in each longer run; a draw's runs of three small letters mostly do not.
    spoken = all(_VOWEL.search(run) for run in runs if len(run) >= 3)
    wordy = run_length > 3.2 and vowels >= 0.28 and spoken
    return 0.1 <= upper <= 0.9 and switches >= 3 and not wordy and shannon_bits(value) >= 3.0


def _b64decode(part: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return None


def is_jwt(token: str) -> bool:
    """Three base64url parts whose first decodes to a JSON object naming an ``alg``."""
    header = _b64decode(token.split(".", 1)[0])
    if header is None:
        return False
    try:
        decoded = json.loads(header)
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(decoded, dict) and "alg" in decoded


def is_basic_credential(value: str) -> bool:
    """Base64 of ``user:password`` (docker ``auths``, ``Authorization: Basic``)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    _user, colon, password = decoded.partition(b":")
    return bool(colon and password) and not is_placeholder(password.decode("utf-8", "replace"))


# Stand-ins written in a provider's own format, in the spellings documentation uses. Words a
# real prefix holds ("test" in ``sk_test_``, "secret" in ``secret_``, "key") are not among them.
# Matched case by case, not case-blind: a random body of base64 holds a given four letters in
# one spelling about once in 17 million places, in any of sixteen spellings once in a million.
# Capitals only for the longer words and x's: bodies of capitals and digits alone (base32 NATS
# seeds, New Relic keys) would hold YOUR or FAKE in about one token of ten thousand.
_STAND_IN_WORDS = (
    *(
        spelling
        for word in ("example", "xxxx", "placeholder", "dummy", "sample", "redacted")
        for spelling in (word, word.upper(), word.capitalize())
    ),
    *("your", "Your", "fake", "Fake"),
)
_SEQUENCES = ("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_STAND_IN_RUN = 6  # "123456", "abcdef", "987654": typed by hand, not drawn at random
_ONE_CHARACTER_RUN = re.compile(r"(.)\1{11}")  # "000000000000", "AAAAAAAAAAAA"


def is_token_stand_in(value: str, *, runs: bool = False) -> bool:
    """A token's prefix around a body no generator draws: an example word, x's, a run of one
    character (unless ``runs``: the format holds such runs) or an ascending or descending run of
    six letters or digits. Long values (JWTs of kilobytes) are judged by the words only where
    short: their base64 holds any given word by chance."""
    if len(value) <= 256 and any(word in value for word in _STAND_IN_WORDS):
        return True
    if not runs and _ONE_CHARACTER_RUN.search(value):
        return True
    return _has_sequence(value)


# The ascending and descending runs of _STAND_IN_RUN digits or letters of one case: in ASCII
# text, exactly what the loop below finds, at the regex engine's pace.
_RUNS = [
    alphabet[start : start + _STAND_IN_RUN]
    for alphabet in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
    for start in range(len(alphabet) - _STAND_IN_RUN + 1)
]
_ASCII_SEQUENCE = re.compile("|".join(_RUNS + [run[::-1] for run in _RUNS]))


def _has_sequence(value: str) -> bool:
    if value.isascii():
        return _ASCII_SEQUENCE.search(value) is not None
    up = down = 1
    for previous, current in itertools.pairwise(value):
        step = ord(current) - ord(previous)
        same_class = previous.isdigit() == current.isdigit() and previous.isalnum()
        up = up + 1 if step == 1 and same_class and current.isalnum() else 1
        down = down + 1 if step == -1 and same_class and current.isalnum() else 1
        if up >= _STAND_IN_RUN or down >= _STAND_IN_RUN:
            return True
    return False


def random_enough(value: str) -> bool:
    return shannon_bits(value) >= 3.0


def mixed_generated(value: str) -> bool:
    """Generated bodies mix digits, capitals and small letters; words and slugs do not."""
    body = value.split("-", 1)[-1] if value.startswith("sk-") else value
    if shannon_bits(body) < 3.5:
        return False
    digits = sum(c.isdigit() for c in body)
    upper = sum(c.isupper() for c in body)
    lower = sum(c.islower() for c in body)
    if digits and upper and lower:
        return True
    # A generated body lacks digits by chance (one in about 400 of 34 letters or digits), and
    # such a token must still be withheld. Words run together cannot pass for one: their
    # capitals are a few word starts, where a random body's are about half its letters.
    letters = upper + lower
    return not digits and letters >= 20 and 0.3 <= upper / letters <= 0.7


def decoded_base64(value: str) -> bytes | None:
    """``value`` as standard or URL-safe base64 (padding optional), or None."""
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
