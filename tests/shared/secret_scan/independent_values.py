"""Fresh secret values for the independent labelled set, drawn at test time.

A positive case is a snippet written the way people really commit secrets, with one ``§kind§``
marker where its secret goes; :func:`fill` draws a value of that kind (random on every run, never
a token copied from anywhere) and returns the text and the value to look for after redaction.
"""

from __future__ import annotations

import base64
import functools
import itertools
import math
import re
import secrets
import string
from collections import Counter
from collections.abc import Callable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
NAME_PIECES = "pw|pass|key|tok|auth|cred|salt|nonce|sec|pwd"
DJANGO = string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"  # get_random_secret_key()
B64 = ALNUM + "+/"
B32 = string.ascii_uppercase + "234567"
# Words people build memorable passwords from; low entropy on purpose.
WORDS = ("Summer", "Winter", "Dragon", "Monkey", "Sunshine", "Galaxy", "Falcon", "Tiger")


# Words a reader takes for a stand-in wherever they appear; a draw that spells one by chance
# (about one in three thousand) is drawn again, so every case fails or passes on every run.
_STAND_IN_WORDS: tuple[str, ...] = (
    "example",
    "sample",
    "your",
    "dummy",
    "fake",
    "here",
    "test",
    "todo",
    "xxxx",
)
_STAND_IN_WORDS += ("fixme", "insert", "replace", "secret", "passw", "redacted", "changeme")


def _bits(value: str) -> float:
    return -sum(k / len(value) * math.log2(k / len(value)) for k in Counter(value).values())


def rand(alphabet: str, n: int) -> str:
    """``n`` characters drawn from ``alphabet``; a long draw holds a digit and, if the alphabet
    has them, a small and a capital letter (a body without digits is a trait with its own
    cases) and spells no stand-in word."""
    while True:
        value = "".join(secrets.choice(alphabet) for _ in range(n))
        lowered = value.lower()
        if any(word in lowered for word in _STAND_IN_WORDS):
            continue
        # A hex draw this uneven is one in ten thousand; digits alone never reach the floor.
        if n >= 16 and _bits(value) < min(3.3, math.log2(len(alphabet)) - 0.6):
            continue
        if n >= 8 and not all(
            any(c in value for c in group) or not any(c in alphabet for c in group)
            for group in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
        ):
            continue
        return value


def password() -> str:
    """A strong password as a manager generates it: letters, a digit, a shell-safe mark.

    Drawn so that no trait this set probes on its own (no digit, a ``%d``, a leading ``@``)
    turns up by chance; those have kinds of their own below.
    """
    body = rand(ALNUM, 12)
    return body[:5] + secrets.choice("!#-_.") + secrets.choice(string.digits) + body[5:] + "!"


def alpha_password() -> str:
    """A generated password of letters and marks only (generators let digits be turned off),
    as most such draws are: capitals between a quarter and three quarters, the case switching
    often, no run of four small letters (a rarer draw reads like words run together)."""
    while True:
        body = rand(string.ascii_letters, 14)
        capitals = sum(c.isupper() for c in body) / len(body)
        switches = sum(a.isupper() != b.isupper() for a, b in itertools.pairwise(body))
        longest = max(len(run) for run in re.split(r"[A-Z]+", body))
        if 0.25 <= capitals <= 0.75 and switches >= 5 and longest <= 3:
            return body[:5] + secrets.choice("!#-_.") + body[5:] + secrets.choice("!#")


def percent_password() -> str:
    """A generated password that happens to hold ``%`` before s, d or r (``%s`` reads as a
    format field)."""
    body = rand(ALNUM, 12)
    return body[:4] + "%" + secrets.choice("sdrSDR") + secrets.choice(string.digits) + body[4:]


def marked_start_password() -> str:
    """A generated password whose first character is a mark such as ``@`` or ``*``."""
    return secrets.choice("@*&") + rand(ALNUM, 13) + secrets.choice(string.digits)


def passphrase() -> str:
    """A diceware-style passphrase: four random words joined by hyphens."""
    words: tuple[str, ...] = (
        "maple",
        "tundra",
        "velvet",
        "orbit",
        "cactus",
        "harbor",
        "pixel",
        "quartz",
    )
    words += ("lantern", "nimbus", "saffron", "glacier", "ember", "walnut", "zephyr", "cobalt")
    return "-".join(secrets.choice(words) for _ in range(4))


def _redraw(draw: Callable[[], str], ok: Callable[[str], bool]) -> str:
    while not ok(value := draw()):
        pass
    return value


def _balanced_letters(value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    return 0.35 <= sum(c.isupper() for c in letters) / len(letters) <= 0.65


def _plain_django(value: str) -> bool:
    """No trait probed on its own: a leading mark, ``%``, brackets."""
    return value[0].isalnum() and not any(c in value for c in "%()[]{}$")


def _django_traits(value: str) -> bool:
    """A leading ``@``, ``*`` or ``&``, an empty ``()`` or a ``%s``-like pair: what about one
    generated Django key in seven holds."""
    return value[0] in "@*&" or "()" in value or re.search("%[sdr]", value) is not None


def url_password() -> str:
    """A password that needs no percent-encoding inside a URL."""
    body = rand(ALNUM, 17)
    return body[:8] + secrets.choice(string.digits) + body[8:]


def human_password() -> str:
    """A memorable password a person picked: a word, a year-like number, a mark."""
    return f"{secrets.choice(WORDS)}{secrets.randbelow(41) + 1990}{secrets.choice('!#$.')}"


def weak_password() -> str:
    """A short memorable password with little variety: a four-letter name, a year of repeated
    digits, a mark."""
    name = secrets.choice(("Acme", "Nova", "Mega", "Zeta"))
    return f"{name}{secrets.choice(('1999', '2000', '2020', '2022'))}{secrets.choice('!#.')}"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _drawn_b64(size: int) -> str:
    """Base64 of ``size`` random bytes spelling no stand-in word (see :func:`rand`)."""
    return _redraw(
        lambda: _b64(secrets.token_bytes(size)),
        lambda v: not any(word in v.lower() for word in _STAND_IN_WORDS),
    )


def _jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = f'{{"sub":"{secrets.randbelow(10**9)}","iat":{secrets.randbelow(10**9) + 10**9}}}'
    payload = base64.urlsafe_b64encode(claims.encode()).rstrip(b"=").decode()
    return f"{header}.{payload}.{rand(URLSAFE, 43)}"


@functools.cache
def _ed25519_pem() -> str:
    key = ed25519.Ed25519PrivateKey.generate()
    raw = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    return raw.decode().strip()


@functools.cache
def _ec_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    raw = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return raw.decode().strip()


@functools.cache
def _pkcs8_pem() -> str:
    key = ec.generate_private_key(ec.SECP384R1())
    raw = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return raw.decode().strip()


def _basic() -> str:
    return _b64(f"deploy:{url_password()}".encode())


KINDS: dict[str, Callable[[], str]] = {
    "pw": password,
    "upw": url_password,
    "hpw": human_password,
    "alpha_pw": alpha_password,
    "weak_pw": weak_password,
    "pct_pw": percent_password,
    "at_pw": marked_start_password,
    "phrase": passphrase,
    "hex32": lambda: rand(HEX, 32),
    "hex40": lambda: rand(HEX, 40),
    "hex64": lambda: rand(HEX, 64),
    "b64_32": lambda: _drawn_b64(32),
    "b64_64": lambda: _drawn_b64(64),
    "alnum20": lambda: rand(ALNUM, 20),
    "alnum32": lambda: rand(ALNUM, 32),
    "alnum40": lambda: rand(ALNUM, 40),
    "urlsafe43": lambda: rand(URLSAFE, 43),
    "uuid": lambda: "-".join(rand(HEX, n) for n in (8, 4, 4, 4, 12)),
    "basic": _basic,
    "jwt": _jwt,
    "aws_id": lambda: "AKIA" + rand(string.ascii_uppercase + "234567", 16),
    "aws_secret": lambda: _redraw(
        lambda: rand(ALNUM + "+/", 40), lambda v: v[0] != "/" and any(c.isdigit() for c in v)
    ),
    "aws_secret_slash": lambda: "/" + rand(ALNUM, 30) + rand(string.digits, 2) + rand(ALNUM, 7),
    "ghp": lambda: "ghp_" + rand(ALNUM, 36),
    "gho": lambda: "gho_" + rand(ALNUM, 36),
    "ghs": lambda: "ghs_" + rand(ALNUM, 36),
    "github_pat": lambda: f"github_pat_{rand(ALNUM, 22)}_{rand(ALNUM, 59)}",
    "glpat": lambda: "glpat-" + rand(URLSAFE, 20),
    "glrt": lambda: "glrt-" + rand(URLSAFE, 20),
    "slack_bot": lambda: (
        f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-" + rand(ALNUM, 24)
    ),
    "slack_user": lambda: (
        f"xoxp-{rand(string.digits, 12)}-{rand(string.digits, 12)}-"
        f"{rand(string.digits, 13)}-{rand(HEX, 32)}"
    ),
    "slack_hook": lambda: (
        f"https://hooks.slack.com/services/T{rand(B32, 10)}/B{rand(B32, 10)}/" + rand(ALNUM, 24)
    ),
    "google_api": lambda: "AIza" + rand(URLSAFE, 35),
    "gocspx": lambda: "GOCSPX-" + rand(URLSAFE, 28),
    "ya29": lambda: "ya29.a0" + rand(URLSAFE, 120),
    "stripe_sk": lambda: "sk_live_" + rand(ALNUM, 99),
    "stripe_rk": lambda: "rk_live_" + rand(ALNUM, 99),
    "stripe_test": lambda: "sk_test_" + rand(ALNUM, 99),
    "whsec": lambda: "whsec_" + rand(ALNUM, 32),
    "sendgrid": lambda: f"SG.{rand(URLSAFE, 22)}.{rand(URLSAFE, 43)}",
    "mailgun": lambda: "key-" + rand(HEX, 32),
    "twilio_sk": lambda: "SK" + rand(HEX, 32),
    "npm": lambda: "npm_" + rand(ALNUM, 36),
    "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 150),
    "dckr": lambda: "dckr_pat_" + rand(URLSAFE, 27),
    "openai": lambda: f"sk-proj-{rand(URLSAFE, 74)}T3BlbkFJ{rand(URLSAFE, 74)}",
    "openai_old": lambda: f"sk-{rand(ALNUM, 20)}T3BlbkFJ{rand(ALNUM, 20)}",
    "anthropic": lambda: f"sk-ant-api03-{rand(URLSAFE, 93)}AA",
    "hf": lambda: "hf_" + _redraw(lambda: rand(string.ascii_letters, 34), _balanced_letters),
    "hf_few_capitals": lambda: (
        "hf_" + rand(string.ascii_lowercase, 26) + rand(string.ascii_uppercase, 8)
    ),
    "groq": lambda: "gsk_" + rand(ALNUM, 52),
    "replicate": lambda: "r8_" + rand(ALNUM, 37),
    "discord_bot": lambda: (
        _b64(str(secrets.randbelow(9 * 10**17) + 10**17).encode()).rstrip("=")
        + f".{rand(URLSAFE, 6)}.{rand(URLSAFE, 38)}"
    ),
    "discord_hook": lambda: (
        f"https://discord.com/api/webhooks/{rand(string.digits, 18)}/" + rand(URLSAFE, 68)
    ),
    "telegram": lambda: f"{secrets.randbelow(9 * 10**9) + 10**9}:AA{rand(URLSAFE, 33)}",
    "shopify": lambda: "shpat_" + rand(HEX, 32),
    "hvs": lambda: "hvs." + rand(URLSAFE, 24),
    "doppler": lambda: "dp.st.prd." + rand(ALNUM, 43),
    "pulumi": lambda: "pul-" + rand(HEX, 40),
    "tfc": lambda: f"{rand(ALNUM, 14)}.atlasv1.{rand(URLSAFE, 67)}",
    "databricks": lambda: "dapi" + rand(HEX, 32),
    "grafana_sa": lambda: f"glsa_{rand(ALNUM, 32)}_{rand(HEX, 8)}",
    "newrelic": lambda: "NRAK-" + rand(string.ascii_uppercase + string.digits, 27),
    "linear": lambda: "lin_api_" + rand(ALNUM, 40),
    "postman": lambda: f"PMAK-{rand(HEX, 24)}-{rand(HEX, 34)}",
    "notion": lambda: "ntn_" + rand(ALNUM, 46),
    "supabase": lambda: "sbp_" + rand(HEX, 40),
    "age": lambda: "AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    "square": lambda: "EAAA" + rand(URLSAFE, 60),
    "dropbox": lambda: "sl." + rand(URLSAFE, 135),
    "dynatrace": lambda: f"dt0c01.{rand(B32, 24)}.{rand(B32, 64)}",
    "atlassian": lambda: f"ATATT3xFfGF0{rand(URLSAFE, 171)}={rand(HEX.upper(), 8)}",
    "tailscale": lambda: f"tskey-auth-{rand(ALNUM, 13)}-{rand(ALNUM, 33)}",
    "azure_key": lambda: _drawn_b64(64),
    "sas_key": lambda: _drawn_b64(32),
    "laravel": lambda: "base64:" + _drawn_b64(32),
    "otp_b32": lambda: rand(B32, 32),
    "django": lambda: _redraw(lambda: rand(DJANGO, 50), _plain_django),
    "django_raw": lambda: _redraw(lambda: rand(DJANGO, 50), _django_traits),
    "fb": lambda: "EAA" + rand(ALNUM, 180),
    "azure_ad": lambda: f"{rand(ALNUM, 3)}{secrets.randbelow(10)}Q~{rand(ALNUM + '_~.', 34)}",
    "azure_devops": lambda: rand(string.ascii_lowercase + "234567", 52),
    "dop": lambda: "dop_v1_" + rand(HEX, 64),
    "sntryu": lambda: "sntryu_" + rand(HEX, 64),
    "bitbucket": lambda: "ATBB" + rand(ALNUM, 28) + rand(HEX.upper(), 8),
    "okta": lambda: "00" + rand(URLSAFE, 40),
    "pscale": lambda: "pscale_tkn_" + rand(URLSAFE, 43),
    "langsmith": lambda: f"lsv2_pt_{rand(HEX, 32)}_{rand(HEX, 10)}",
    "openrouter": lambda: "sk-or-v1-" + rand(HEX, 64),
    "pplx": lambda: "pplx-" + rand(ALNUM, 48),
    "xai": lambda: "xai-" + rand(ALNUM, 80),
    "brevo": lambda: f"xkeysib-{rand(HEX, 64)}-{rand(ALNUM, 16)}",
    "mapbox": lambda: (
        "sk."
        + base64.urlsafe_b64encode(f'{{"u":"acme","a":"{rand(LOWER_ALNUM, 25)}"}}'.encode())
        .rstrip(b"=")
        .decode()
        + "."
        + rand(URLSAFE, 22)
    ),
    "sonar": lambda: "squ_" + rand(HEX, 40),
    "nuget": lambda: "oy2" + rand(LOWER_ALNUM, 43),
    "rubygems": lambda: "rubygems_" + rand(HEX, 48),
    "crates": lambda: "cio" + rand(ALNUM, 32),
    "netlify": lambda: "nfp_" + rand(ALNUM, 36),
    "contentful": lambda: "CFPAT-" + rand(URLSAFE, 43),
    "buildkite": lambda: "bkua_" + rand(HEX, 40),
    "mailchimp": lambda: f"{rand(HEX, 32)}-us{secrets.randbelow(20) + 1}",
    "fcm": lambda: f"AAAA{rand(URLSAFE, 7)}:APA91b{rand(URLSAFE, 134)}",
    "elevenlabs": lambda: "sk_" + rand(HEX, 48),
    "jfrog": lambda: "AKCp" + rand(ALNUM, 69),
    "jenkins": lambda: "11" + rand(HEX, 32),
    "alnum24": lambda: rand(ALNUM, 24),
    # Base64 that spells no secret-like name: a draw holding "pw" before its "=" padding reads
    # as an assignment, a trait with a case of its own ("b64_pw_tail").
    "b64_plain": lambda: _redraw(
        lambda: _b64(secrets.token_bytes(32)), lambda v: not re.search(NAME_PIECES, v, re.I)
    ),
    "b64_pw_tail": lambda: "Q" + rand(ALNUM, 31) + "mqfz4gc69Pw=",
    "b64_pw": lambda: _b64(password().encode()),
    "b64_pem": lambda: _b64(_ec_pem().encode() + b"\n"),
    "pkcs8_json": lambda: _pkcs8_pem().replace("\n", "\\n"),
    "ed25519_pem": _ed25519_pem,
    "ec_pem": _ec_pem,
    "pkcs8_pem": _pkcs8_pem,
}

_MARKER = re.compile(r"§@?(\w+)§")


def fill(template: str) -> tuple[str, str]:
    """The template with its one marker replaced by a fresh value, and that value."""
    kinds = _MARKER.findall(template)
    assert len(kinds) == 1, template
    value = KINDS[kinds[0]]()
    marker = _MARKER.search(template)
    assert marker is not None
    indent = template[template.rfind("\n", 0, marker.start()) + 1 : marker.start()]
    repeat = indent.isspace() or marker.group(0).startswith("§@")
    placed = value.replace("\n", "\n" + indent) if repeat else value
    return _MARKER.sub(lambda _m: placed, template), value


def survivors(value: str, redacted: str, width: int = 12) -> list[str]:
    """Every ``width``-character piece of one line of ``value`` still present in ``redacted``.

    Key blocks are checked line by line below their armour, so a kept ``-----BEGIN`` line is not
    a leak; a value shorter than ``width`` must be gone entirely.
    """
    lines = [
        ln for ln in value.replace("\\n", "\n").splitlines() if ln and not ln.startswith("-----")
    ]
    found = []
    for line in lines:
        size = min(width, len(line))
        found += [line[i : i + size] for i in range(len(line) - size + 1)]
    return [piece for piece in found if piece in redacted]


def fill_any(template: str) -> str:
    """The template with every marker replaced by a fresh value (for look-alikes, which are
    random but not secret: commit ids, digests, UUIDs)."""
    return _MARKER.sub(lambda m: KINDS[m.group(1)](), template)
