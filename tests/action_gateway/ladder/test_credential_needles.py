"""A private key is looked for in results by its secret numbers, found in any serialisation of
the key, while its public half (in every authorized_keys) passes."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from safeport.action_gateway.ladder.credential_texts import result_needles
from safeport.shared.known_secrets import KnownSecrets
from safeport.vault.secrets import SecretBytes, SshKeySecret, TokenSecret

PrivateKey = ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def _keys() -> list[PrivateKey]:
    return [
        ed25519.Ed25519PrivateKey.generate(),
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec.generate_private_key(ec.SECP256R1()),
    ]


def _search(secret: SshKeySecret) -> KnownSecrets:
    texts, numbers = result_needles(secret)
    return KnownSecrets(texts, numbers)


@pytest.mark.parametrize("key", _keys(), ids=["ed25519", "rsa", "ecdsa"])
@pytest.mark.parametrize("passphrase", [None, b"a passphrase"])
def test_every_serialisation_of_the_key_is_found_and_its_public_half_is_not(
    key: PrivateKey, passphrase: bytes | None
) -> None:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase
        else serialization.NoEncryption()
    )
    openssh = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption
    )
    secret = SshKeySecret(
        SecretBytes(openssh), passphrase=SecretBytes(passphrase) if passphrase else None
    )
    search = _search(secret)
    plain = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    pkcs8 = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    body = base64.b64decode(b"".join(plain.splitlines()[1:-1]))
    assert search.found_in(plain.decode())  # cat
    assert search.found_in(plain.hex())  # xxd -p
    assert search.found_in(base64.b64encode(pkcs8).decode())  # another format
    assert search.found_in(body.hex())  # base64 -d | xxd -p
    assert search.found_in(openssh.decode())  # encrypted: its body as text
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert not search.found_in(base64.b64decode(public.split()[1]).hex())
    if passphrase is None:  # an encrypted key's body holds the public key in the clear
        assert not search.found_in(public.decode() + " gateway\n")


def test_a_key_that_cannot_be_read_is_searched_by_its_text_and_other_secrets_as_before() -> None:
    odd = SshKeySecret(SecretBytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key body at all\n"))
    assert result_needles(odd) == (["not a key body at all", "not a key body at all"], [])
    token = TokenSecret(token=SecretBytes(b"tok-123"))
    assert result_needles(token) == (["tok-123"], [])


def test_a_pem_key_is_found_in_its_openssh_form_and_its_public_half_is_not() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    search = _search(SshKeySecret(SecretBytes(pem)))
    openssh = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    assert search.found_in(pem.decode()) and search.found_in(openssh.hex())
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert not search.found_in(public.decode())
