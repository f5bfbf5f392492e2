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
as private. So is key body outside every block however it is laid out (short lines, groups
split by spaces, after a label or a comment mark, in an SSH key's comment), unless the detector
withholds it from what is served anyway. Redacting only the private block would rest on
recognising its shape; refusing the file rests on nothing but the public blocks parsing, and
one verdict serves every path alike (reads, excerpts, hashes, searches, the index). The
detector still runs over what is served.

Pure: no I/O; the gate and the walk hand it the bytes they read.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Literal

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.x509 import ObjectIdentifier

from safeport.shared.secret_scan import find_secrets

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
# PKCS#9 extensionRequest: the extensions (names, key usages) a request asks for.
_EXTENSION_REQUEST = ObjectIdentifier("1.2.840.113549.1.9.14")
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
# Key body outside a block: a run of base64 (standard or URL-safe) of at least _KEY_CHARS
# characters, words of it that read as one body split up (_GROUP), and the comment marks a
# line may start with.
_KEY_CHARS = 40
_GROUP = 12
# Random base64 changes class at about 0.63 of its characters; 0.35 misses one run of 40 in
# about 500, words stay under 0.3.
_CHANGES = 0.35
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_KEY_RUN = re.compile(r"[A-Za-z0-9+/=_-]{40,}")
_B64_WORD = re.compile(r"[A-Za-z0-9+/=_-]+")
_COMMENT = re.compile(r"^\s*(?:#+|//|;+|>+|\*)")
_SSH_TYPE = re.compile(r"(?:ssh|ecdsa|sk)-[A-Za-z0-9@.-]{1,60}")
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
    if rule == "ssh-public-keys":
        rest = "\n".join(_without_public_keys(line) for line in rest.splitlines())
    if _holds_key_body(_without_found_secrets(rest)):
        return False
    if rule == "certificates":
        return blocks > 0 and _PRIVATE_WORD.search(rest) is None
    return True


def _holds_key_body(rest: str) -> bool:
    """Whether text outside the blocks holds what reads as key body: a run of base64 (either
    alphabet) of key length anywhere in a line (``X-Key: …``, ``# …``, a comment after a public
    key), or such a run written in short lines or in groups split by spaces (see
    :func:`_mixed`)."""
    run: list[str] = []
    for line in [*rest.splitlines(), ""]:
        if any(_mixed(m.group(0)) for m in _KEY_RUN.finditer(line)):
            return True
        words = _COMMENT.sub("", line).split()
        if words and all(_B64_WORD.fullmatch(w) for w in words) and _grouped(words):
            run.append("".join(words))
            continue
        if _mixed("".join(run)):
            return True
        run = []
    return False


def _grouped(words: list[str]) -> bool:
    """Words that read as pieces of one body (every one but the last long), not prose."""
    return all(len(w) >= _GROUP for w in words[:-1]) and (len(words) > 1 or len(words[0]) >= 8)


def _mixed(run: str) -> bool:
    """Whether a run reads as random base64: within its letters and digits the case or class
    changes from one character to the next about two times in three, and in words, names,
    paths and host names (``GlobalSign-Root-CA-R3``) less than one time in three. It holds
    upper case, lower case and digits, as every key body of that length does."""
    if len(run) < _KEY_CHARS:
        return False
    segments = _ALNUM.findall(run)
    chars = sum(len(seg) for seg in segments)
    changes = sum(_kind(a) != _kind(b) for seg in segments for a, b in itertools.pairwise(seg))
    kinds = {_kind(c) for seg in segments for c in seg}
    # A hex fingerprint changes class as often, but never holds upper and lower case both.
    return chars >= _KEY_CHARS and len(kinds) == 3 and changes >= _CHANGES * chars


def _kind(char: str) -> int:
    return 0 if char.isupper() else 1 if char.islower() else 2


def _without_public_keys(line: str) -> str:
    """An SSH key line with the body of each public key in it left out, once it parses as a
    public key (or a certificate) of the type written before it."""
    kept: list[str] = []
    for word in line.split():
        if kept and _SSH_TYPE.fullmatch(kept[-1]) and _ssh_public(kept[-1], word):
            kept[-1] = "-"  # the type stays a word apart: the comment after is not joined on
            continue
        kept.append(word)
    return " ".join(kept)


def _without_found_secrets(text: str) -> str:
    """``text`` with what the detector finds blanked: it is withheld from what is served (an
    ``environment="TOKEN=…"`` option in ``authorized_keys``), so it is not key body here."""
    spans = find_secrets(text)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for span in sorted(spans):
        if span.start >= pos:
            out.append(text[pos : span.start])
            out.append(" " * (span.end - span.start))
            pos = span.end
    out.append(text[pos:])
    return "".join(out)


def _ssh_public(kind: str, body: str) -> bool:
    try:
        serialization.load_ssh_public_identity(f"{kind} {body}".encode("ascii"))
    except (ValueError, TypeError, UnsupportedAlgorithm, UnicodeEncodeError):
        return False
    return True


def _parses(label: str, block: str) -> bool:
    """Whether one armoured block parses as the public material its label names."""
    load = _LOADERS.get(label)
    if load is None:
        return False
    try:
        loaded = load(block.strip().encode("ascii"))
        if isinstance(loaded, x509.CertificateSigningRequest):
            # A request's attributes can carry a challenge password (SCEP enrolment, revocation),
            # base64 inside the block where the detector never sees it: only the extensions a
            # request asks for are public.
            return all(a.oid == _EXTENSION_REQUEST for a in loaded.attributes)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return False
    return True
