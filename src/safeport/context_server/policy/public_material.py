"""Public key material: the names served although they look like keys, and the content check
their names alone cannot make.

``authorized_keys``, ``known_hosts``, ``*.pub`` and certificates (``.pem``, ``.crt``, ``.cer``,
``.csr``) hold what a person publishes: public keys, host keys, certificates and signing
requests, which an agent reads to debug a deployment. Yet a ``.pem`` holds a private key as
often as a certificate, and a private key can be saved under any name (``x.pub``). So such a
name is only a candidate: the file is served when its content holds public material and
nothing else, judged on the bytes the read serves (never cached by name).

It fails closed, and for the whole file: one private block, one block that does not parse as
what its label says (a private key relabelled ``CERTIFICATE`` does not), an armour line that is
not part of a well-formed block, or a bare run of key body outside one, and the file is refused
as private. Redacting only the private block would rest on recognising its shape; refusing the
file rests on nothing but the public blocks parsing, and one verdict serves every path alike
(reads, excerpts, hashes, searches, the index). The detector still runs over what is served.

Pure: no I/O; the gate and the walk hand it the bytes they read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

# Which check a name's content gets: certificate files must hold at least one public block and
# no sign of a private key anywhere; SSH public key files (lines of ``type base64 comment``)
# must hold no private key, armoured or bare.
PublicRule = Literal["certificates", "ssh-public-keys"]

CERTIFICATE_EXTENSIONS = frozenset(["pem", "crt", "cer", "csr"])
SSH_PUBLIC_NAMES = frozenset(["authorized_keys", "authorized_keys2", "known_hosts", "known_hosts2"])
# A bundle of every public CA is about 250 KB; anything larger is not judged, so not served.
MAX_JUDGED_BYTES = 1024 * 1024

_LOADERS: dict[str, Callable[[bytes], object]] = {
    "CERTIFICATE": x509.load_pem_x509_certificate,
    "CERTIFICATE REQUEST": x509.load_pem_x509_csr,
    "NEW CERTIFICATE REQUEST": x509.load_pem_x509_csr,
    "PUBLIC KEY": serialization.load_pem_public_key,
    "RSA PUBLIC KEY": serialization.load_pem_public_key,
}
# A block: its BEGIN line, base64 lines only (no headers: a public block has none), the END
# line of the same label. Anything else with an armour line is left outside, and refused there.
_BLOCK = re.compile(
    r"(?m)^[ \t]*-----BEGIN ([A-Z0-9 ]{1,40})-----[ \t]*\r?\n"
    r"((?:[ \t]*[A-Za-z0-9+/=]{1,65536}[ \t]*\r?\n){1,4096}?)"
    r"[ \t]*-----END \1-----[ \t]*\r?$"
)
# What no public file holds outside its blocks: an armour line (any case, any dash count), a
# private key's label or a PuTTY key, the body of an OpenSSH private key (``openssh-key-v1``).
_PRIVATE_SIGNS = re.compile(
    r"(?i:-{2,} ?(?:BEGIN|END)\b)|PRIVATE KEY|PuTTY-User-Key-File|b3BlbnNzaC1rZXktdjE"
)
# A line that is only key body: base64 with no armour around it.
_BARE_BODY = re.compile(r"[A-Za-z0-9+/=]{40,}")
# In a certificate file, OpenSSL's text dumps of private keys (``Private-Key:``,
# ``privateExponent:``, ``priv:``) are private material outside any block.
_PRIVATE_WORD = re.compile(r"(?i)priv")


def public_rule(form: str) -> PublicRule | None:
    """The content check one normalised, undecorated name form asks for, or None."""
    if form in SSH_PUBLIC_NAMES or form.endswith(".pub"):
        return "ssh-public-keys"
    dot = form.rfind(".")
    if dot >= 0 and form[dot + 1 :] in CERTIFICATE_EXTENSIONS:
        return "certificates"
    return None


def holds_only_public_material(data: bytes, rule: PublicRule) -> bool:
    """Whether ``data`` (a whole file) holds public keys, certificates and requests, and text
    around them, and nothing private or unparseable."""
    if len(data) > MAX_JUDGED_BYTES or b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    outside: list[str] = []
    done = 0
    blocks = 0
    for block in _BLOCK.finditer(text):
        if not _parses(block.group(1), block.group(0)):
            return False
        outside.append(text[done : block.start()])
        done = block.end()
        blocks += 1
    outside.append(text[done:])
    rest = "".join(outside)
    if _PRIVATE_SIGNS.search(rest):
        return False
    if any(_BARE_BODY.fullmatch(line.strip()) for line in rest.splitlines()):
        return False
    if rule == "certificates":
        return blocks > 0 and _PRIVATE_WORD.search(rest) is None
    return True


def _parses(label: str, block: str) -> bool:
    """Whether one armoured block parses as the public material its label names."""
    load = _LOADERS.get(label)
    if load is None:
        return False
    try:
        load(block.strip().encode("ascii"))
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return False
    return True
