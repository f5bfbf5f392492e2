"""The words that make a name secret-like, and the ones that make it about a secret instead.

``dbPassword``, ``DB_PASSWORD``, ``X-Db-Password`` and ``db password`` all name a password;
``password_url``, ``is_token`` and ``max_tokens`` name something about one. A weak name
(``key``, ``api``, ``seed``) may hold a secret but as often holds something else, and the rules
ask more of its value. Shared by every rule that judges a name (``assignments.py``,
``pairs.py``, ``commands.py``, ``prose.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from safeport.shared.secret_scan.passwords import misspelled_password

_SEGMENTS = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
# Shortened spellings of "password" (a prefilter literal each: none holds "pass" or "pwd").
MISSPELLINGS = (
    "pswd",
    "psswd",
    "pswrd",
    "psswrd",
    "psword",
    "pssword",
    "paswd",
    "paswrd",
    "pasword",
    "passwort",
    # Prefixes of the misspellings that hold no "pass" (``paasword``, ``paswort``): the name is
    # judged by ``passwords.misspelled_password``.
    "paasw",
    "pasw",
)
# "Password" as people write it in other languages (tickets, wikis and comments are not all in
# English): a prefilter literal each, in every case the prefilter spells.
TRANSLATIONS = (
    "kennwort",
    "contraseña",
    "contrasena",
    "senha",
    "wachtwoord",
    "пароль",
    "密码",
    "密碼",
    "비밀번호",
    "비번",
    "パスワード",
    "motdepasse",  # French; "mot_de_passe" is three words, judged by _JOINED_TRANSLATIONS
    "passe",
    "haslo",  # Polish
    "hasło",
    "heslo",  # Czech, Slovak
    "sifre",  # Turkish
    "şifre",
    "parola",  # Turkish, Romanian, Italian
    "losenord",  # Swedish
    "lösenord",
    "passord",  # Norwegian
    "adgangskode",  # Danish
    "salasana",  # Finnish
    "jelszo",  # Hungarian
    "jelszó",
    "katasandi",  # Indonesian
    "matkhau",  # Vietnamese
)
# Translations written as several words (``mot_de_passe``, ``kata_sandi``, ``mat_khau``).
_JOINED_TRANSLATIONS = ("motdepasse", "katasandi", "matkhau")
# Names that end in ``PAT`` (a personal access token: ``GITHUB_PAT``, ``AZURE_DEVOPS_EXT_PAT``)
# in environment-style capitals; a small ``pat`` is as often a pattern.
_PAT_ENDING = "pat"
# Words that make a name secret-like, alone or as the end of a segment ("dbPassword",
# "githubToken"), and pairs that do together ("api_key", "client_secret").
_SECRET_SEGMENTS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pw",
        "pass",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "apikey",
        "credential",
        "credentials",
        "cred",
        "creds",
        "auth",
        "authtoken",
        "authorization",
        "bearer",
        "privatekey",
        "accesskey",
        "secretkey",
        "passwords",
        "salt",
        "nonce",
        # The spellings people shorten a password to when they drop vowels or a letter.
        *MISSPELLINGS,
        *TRANSLATIONS,
    }
)
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "pwd", "pass")
# Words ending in "pass" that name no password.
_NOT_PASS = frozenset({"bypass", "compass", "encompass", "surpass", "overpass", "underpass"})
_KEY_PARTNERS = frozenset(
    {
        "api",
        "access",
        "private",
        "secret",
        "signing",
        "encryption",
        "master",
        "auth",
        "account",
        "authentication",
    }
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A name whose last word is one of these holds something about a secret, not the secret.
_ABOUT_SECRET = _words(
    "url uri endpoint path file filename dir type name id ids length len size count env var "
    "field header prefix suffix format pattern regex re policy class mode method kind expiry "
    "expires expiration ttl timeout required enabled label placeholder hint help message msg "
    "error prompt template hash digest validator location source provider index host port "
    "user username login min max limit version algorithm alg lifetime age cache manager "
    "service handler factory callback param params parameter arg args option options config "
    "settings schema description title text widget input form reset changed strength chars "
    "encoding key_id keyid location store command cmd flag flags opt mask pos start end "
    "offset lines column col width protocol scheme magic ref refs marker markers char "
    "start_char regexp spec specs sep separator delimiter quote style"
)
_WEAK_WORDS = frozenset({"key", "pkey", "api", "authentication", "seed"})
_QUESTION_WORDS = _words(
    "is has use uses should get enable enabled require requires check validate show hide "
    "forgot num max min no n"
)


# A name's characters, read backwards from a keyword (``name_begins``).
_NAME_RUN = re.compile(r"[\w.\-]*")
_NAME_REACH = 64


def name_begins(text: str, start: int, line_start: int) -> int:
    """Where the name holding the keyword at ``start`` begins: back over letters, digits,
    ``_``, ``.`` and ``-`` (``\\w`` is exactly what ``str.isalnum`` takes, and ``_``), on its
    line and at most 64 characters back."""
    floor = max(line_start, start - _NAME_REACH)
    if start <= floor or not (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        return start  # the keyword opens its name ("key", "token"): most hits
    # The run read backwards at C speed: constants' names ("FAILING_EXAMPLES_KEY") are long.
    return start - _NAME_RUN.match(text[floor:start][::-1]).end()  # type: ignore[union-attr]


def name_words(name: str) -> list[str]:
    """The lower-cased words of a name: ``dbPassword``, ``DB_PASSWORD`` and ``X-Db-Password``
    all give ``["db", "password"]`` (the last after an ``x``)."""
    if name.isalnum() and name.islower():
        return [name]  # one small word ("key", "token"): no separator and no capital to split at
    return list(_split_name(name))


# Code repeats its names (``key``, ``Token``, ``DHPrivateKey``) and several looks judge the same
# name at one hit: what a name's words are and whether they name a secret are remembered, by the
# name alone (both are pure functions of it), for the few thousand most recent.
_NAMES_REMEMBERED = 4096


@functools.lru_cache(maxsize=_NAMES_REMEMBERED)
def _split_name(name: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _SEGMENTS.split(name) if word)


# A key its owner publishes (Stripe's publishable key, a VAPID or SSH public key): the word just
# before ``key`` says so (``public_key``, ``pub_key``, ``PUBLISHABLE_KEY``). A secret put by
# mistake under a browser-exposed prefix (``NEXT_PUBLIC_API_KEY``) is still withheld.
_PUBLIC = frozenset({"public", "publishable", "pub"})
_PRIVATE = frozenset({"secret", "private", "priv", "password", "passwd", "pwd", "passphrase"})
_BROWSER_PREFIXES = frozenset({"next", "nuxt", "expo", "vite", "gatsby", "react"})


def public_name(words: Sequence[str]) -> bool:
    """Whether the name is of a key its owner publishes, and names nothing private besides."""
    if words[0] in _BROWSER_PREFIXES or words[-1] != "key" or len(words) < 2:
        return False
    return words[-2] in _PUBLIC and not any(word in _PRIVATE for word in words)


def secret_name(name: str, words: list[str]) -> bool:
    """Whether ``name`` (split into ``words`` by ``name_words``) names a secret itself, rather
    than something about one (``password_url``, ``is_token``) or one its owner publishes."""
    return _secret_name(name, tuple(words))


@functools.lru_cache(maxsize=_NAMES_REMEMBERED)
def _secret_name(name: str, words: tuple[str, ...]) -> bool:
    if words[-1] in _ABOUT_SECRET or (words[0] in _QUESTION_WORDS and len(words) > 1):
        return False
    if public_name(words):
        return False
    if "tokenizer" in words[-1] or words[-1] in {"tokens", "secretary"}:
        return False
    if "".join(words[-3:]).endswith(_JOINED_TRANSLATIONS):
        return True
    if words[-1] == _PAT_ENDING and len(words) > 1 and name.isupper():
        return True
    for index, numbered in enumerate(words):
        word = numbered.rstrip("0123456789")  # password2, salt1, TOKEN_2; but Auth0 is a name
        word = numbered if word == "auth" else word
        if word in _SECRET_SEGMENTS or (word.endswith(_SECRET_ENDINGS) and word not in _NOT_PASS):
            return True
        if word.startswith("p") and misspelled_password(word):  # passowrd, paasword, passworsd
            return True
        if word == "key" and index > 0 and words[index - 1] in _KEY_PARTNERS:
            return True
    # STRIPE_KEY, SENDGRID_KEY: environment-style constants that end in KEY; X-Service-Key: a
    # header's name.
    return len(words) > 1 and words[-1] == "key" and (name.isupper() or words[0] == "x")


def weak_secret_name(words: list[str]) -> bool:
    """Whether the name may hold a secret but as often holds something else: a dictionary's
    ``key``, an ``api``'s name, a ``seed``. Its value must look more random than a password's
    (``assignments.strongly_random``)."""
    if words[-1] in _ABOUT_SECRET or (words[0] in _QUESTION_WORDS and len(words) > 1):
        return False
    return words[-1].rstrip("0123456789") in _WEAK_WORDS and not public_name(words)


# A name's letters run in words (``Credentials``, ``Provider``, ``cache``); a random draw's
# letters, in runs of one to three between digits and case changes.
_LETTER_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_NAME_SEGMENT_AVERAGE = 4.0  # a random draw of 20 characters averages 4 or more once in ~300


def reads_as_names(value: str) -> bool:
    """Whether the value's letters run as words do: names joined in camel case or by
    separators (``AwsCredentialsProvider2``, ``projects/my-project/keyRings``)."""
    segments = _LETTER_SEGMENT.findall(value)
    return bool(segments) and sum(map(len, segments)) >= _NAME_SEGMENT_AVERAGE * len(segments)
