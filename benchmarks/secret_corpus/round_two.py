"""Samples of the second round's classes: short passwords a person chose under a password's name
(and its misspellings), URL credentials after an email login or inside an encoded query, keys
written as byte arrays, and GitHub's dated installation tokens, Akamai EdgeGrid tokens, NTLM
authenticate messages and MySQL password hashes; with the look-alikes beside each.

Values are fresh on every run; nothing secret-shaped is stored.
"""

from __future__ import annotations

import base64
import os
import secrets
import string
from collections.abc import Iterator

from benchmarks.secret_corpus.corpus import Sample
from benchmarks.secret_corpus.tokens import ALNUM, rand
from safeport.shared.secret_scan.checks import is_placeholder

SHORT_PASSWORDS = {
    "short-assignment": 'password = "{v}"\n',
    "short-json": '{{"login": "ops", "password": "{v}"}}\n',
    "short-pwd": "pwd = '{v}'\n",
    "short-element": "<password>{v}</password>\n",
    "short-passphrase": "passphrase: '{v}'\n",
    "misspelled-passowrd": 'passowrd = "{v}"\n',
    "misspelled-paasword": '"paasword": "{v}",\n',
    "misspelled-compared": 'if passworsd == "{v}":\n',
}
URLS = {
    "url-email-login": 'dsn = "smtps://ops.team@corp.example:{v}@smtp.corp.example:465"\n',
    "url-encoded-query": "next=https%3A%2F%2Fh.example%2Fcb%3Fa%3D1%26token%3D{v}%26b%3D2\n",
}
BYTE_ARRAYS = {
    "bytes-c-define": "#define AES_KEY {{{hex}}}\n",
    "bytes-c-array": "static const uint8_t key[] = {{{dec}}};\n",
    "bytes-go": "\tSecret: []byte{{{dec}}},\n",
    "bytes-java": "byte[] key = new byte[]{{{hex}}};\n",
    "bytes-python": "key = bytes([{dec}])\n",
    "bytes-escaped": 'salt = b"{escaped}"\n',
}
LOOK_ALIKES = {
    "short-word": 'password = "hidden"\n',
    "short-path": 'pwd = "/usr/local/src"\n',
    "short-ordinary-name": 'passport = "k3!zq9"\n',
    "short-parsed": 'parsed = "k3!zq9"\n',
    "url-port": "see http://ops@host.example:8080/status\n",
    "url-encoded-placeholder": "next=%26token%3D%7BTOKEN%7D%26\n",
    "bytes-sequence": "key = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
    "bytes-sizes": "key_sizes = [128, 192, 256, 512, 64, 32, 16, 8]\n",
    # NTLM's negotiate message (type 1) carries no credential.
    "ntlm-negotiate": base64.b64encode(b"NTLMSSP\x00\x01\x00\x00\x00" + bytes(24)).decode() + "\n",
    "mysql-star": "SELECT c AS '*' FROM t;\n",
}


def _short() -> str:
    """Six characters as a person types them: four different letters, a digit, a symbol."""
    letters = "".join(secrets.SystemRandom().sample(string.ascii_lowercase, 4))
    return letters + rand(1, string.digits) + secrets.choice("!#%*?@^")


def _drawn_token() -> str:
    """Sixteen characters as a generator draws them, redrawn if they spell a stand-in's word."""
    while True:
        value = rand(12, ALNUM) + rand(2, string.digits) + rand(2, ALNUM)
        if not is_placeholder(value):
            return value


def _key_bytes() -> list[int]:
    while True:
        values = [secrets.randbelow(256) for _ in range(16)]
        if len(set(values)) >= 4:
            return values


def _formats() -> Iterator[tuple[str, str, str]]:
    value = f"ghs_20260307_{rand(40, ALNUM)}"
    yield "ghs-dated", f"GITHUB_TOKEN={value}\n", value
    lower_digits = string.ascii_lowercase + string.digits
    value = f"akab-{rand(16, lower_digits)}-{rand(16, lower_digits)}"
    yield "akamai", f"T: {value}\n", value
    # Security buffers (LM, then NT response: length, length, offset), then the responses.
    buffers = b"\x18\x00\x18\x00\x40\x00\x00\x00\x18\x00\x18\x00\x58\x00\x00\x00" + bytes(36)
    message = b"NTLMSSP\x00\x03\x00\x00\x00" + buffers + os.urandom(48)
    value = base64.b64encode(message).decode()
    yield "ntlm-authenticate", f"Authorization-Reply: {value}\n", value
    value = "*" + secrets.token_hex(20).upper()
    yield (
        "mysql-hash",
        f"ALTER USER app IDENTIFIED WITH mysql_native_password AS '{value}';\n",
        value,
    )


def round_two_samples() -> Iterator[Sample]:
    for _ in range(4):
        for shape, template in SHORT_PASSWORDS.items():
            value = _short()
            yield Sample(f"context:{shape}", template.format(v=value), value)
        for shape, template in URLS.items():
            value = _drawn_token()
            yield Sample(f"context:{shape}", template.format(v=value), value)
        for shape, template in BYTE_ARRAYS.items():
            values = _key_bytes()
            spelled = {
                "hex": ", ".join(f"0x{v:02x}" for v in values),
                "dec": ", ".join(str(v) for v in values),
                "escaped": "".join(f"\\x{v:02x}" for v in values),
            }
            text = template.format(**spelled)
            secret = next(s for s in spelled.values() if s in text)
            yield Sample(f"context:{shape}", text, secret)
        for shape, text, value in _formats():
            yield Sample(f"token:{shape}", text, value)
    for name, text in LOOK_ALIKES.items():
        yield Sample(f"negative:{name}", text, None)
