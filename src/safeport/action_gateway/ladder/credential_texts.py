"""The texts of the credential an action runs with, as the known-secret checks look for them.

Whatever comes back from the action (rows, output, fields, an error message) is searched for
these, in every form :mod:`safeport.shared.known_secrets` names. A per-action credential from an
OpenBao server (a database role's password, a signed key) is listed the same way as one from the
local vault: it is the secret that was in the gateway's hands.
"""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


def credential_texts(secret: object) -> list[str]:
    """A token; a password (and ``user:password``, what basic auth encodes); a private key's
    body and its passphrase. A key's ``-----BEGIN …-----`` lines are left out: they are the
    same in every key and would withhold any text that merely names the format."""
    if isinstance(secret, TokenSecret):
        return _nonempty([_text(secret.token.reveal())])
    if isinstance(secret, BasicSecret):
        password = _text(secret.password.reveal())
        return _nonempty([password, f"{secret.username}:{password}" if password else ""])
    if isinstance(secret, SshKeySecret):
        lines = _text(secret.private_key.reveal()).splitlines()
        # Armour lines and legacy PEM headers (``Proc-Type: …``) are not secret.
        body = [line.strip() for line in lines if line.strip() and not _armour(line)]
        texts = ["\n".join(body), "".join(body)]
        if secret.passphrase is not None:
            texts.append(_text(secret.passphrase.reveal()))
        return _nonempty(texts)
    return []


def result_needles(secret: object) -> tuple[list[str], list[bytes]]:
    """What a result is searched for: the credential's texts and a key's secret numbers. An
    unencrypted key is searched for by its numbers alone, not its body's text: the body also
    encodes the public key, which every ``authorized_keys`` and ``ssh-keygen -y`` prints. The
    numbers are found in the body through the views' decoding (its base64, or a dump of it,
    two decodings away) and in any other serialisation of the key."""
    numbers = credential_blobs(secret)
    if isinstance(secret, SshKeySecret) and numbers and secret.passphrase is None:
        return [], numbers
    # An encrypted key's body is still searched as text: it is not the numbers, but with it
    # the passphrase can be guessed offline (its public key then withholds authorized_keys).
    return credential_texts(secret), numbers


def credential_blobs(secret: object) -> list[bytes]:
    """A private key's secret numbers (an Ed25519 seed; RSA's ``d``, primes and exponents; an
    EC or DSA private value) as big-endian bytes: what any serialisation of the key holds
    (PKCS#8, ``openssl pkey -text``, a dump of the decoded body: ``base64 -d | xxd``). The
    public half is left out."""
    if not isinstance(secret, SshKeySecret):
        return []
    data = secret.private_key.reveal()
    password = secret.passphrase.reveal() if secret.passphrase is not None else None
    # Only the numbers are read here; the key's consistency is checked where it is used, and
    # checking it again would cost half a second for a 4096-bit RSA key on every action.
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            key: object = serialization.load_ssh_private_key(
                data, password, unsafe_skip_rsa_key_validation=True
            )
        else:
            key = serialization.load_pem_private_key(
                data, password, unsafe_skip_rsa_key_validation=True
            )
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return []  # a key cryptography cannot read: its texts are still searched
    return [number for number in _private_numbers(key) if len(number) >= 8]


def _private_numbers(key: object) -> list[bytes]:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return [key.private_bytes_raw()]
    if isinstance(key, rsa.RSAPrivateKey):
        n = key.private_numbers()
        return [_big_endian(v) for v in (n.d, n.p, n.q, n.dmp1, n.dmq1, n.iqmp)]
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return [_big_endian(key.private_numbers().private_value)]
    if isinstance(key, dsa.DSAPrivateKey):
        return [_big_endian(key.private_numbers().x)]
    return []


def _big_endian(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")


def _armour(line: str) -> bool:
    return line.startswith("-----") or ":" in line


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def _nonempty(texts: list[str]) -> list[str]:
    return [text for text in texts if text]
