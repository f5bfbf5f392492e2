"""Secrets encoded once more in base64 (a PEM private key, a private JWK or JWKS, a JWT) and
private keys in bare base64 DER: withheld whole, on one line or wrapped at a fixed width.
Certificates, public keys, images and look-alike prefixes are served, and a megabyte of
encoded markers is scanned in bounded time."""

from __future__ import annotations

import base64
import json
import secrets
import textwrap
import time

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from safeport.shared.secret_scan import find_secrets, redact

_PEM, _DER = serialization.Encoding.PEM, serialization.Encoding.DER
_NONE = serialization.NoEncryption()
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _wrapped(encoded: str, indent: str = "", width: int = 76) -> str:
    return "".join(f"{indent}{line}\n" for line in textwrap.wrap(encoded, width))


def _assert_withheld(text: str, encoded: str) -> None:
    redacted, findings = redact(text)
    pieces = [encoded[i : i + 24] for i in range(0, len(encoded) - 24, 24)]
    assert [piece for piece in pieces if piece in redacted] == []
    assert findings
    assert redacted.count("\n") == text.count("\n")


PEM_KEYS = {
    "rsa-pkcs1": RSA_KEY.private_bytes(_PEM, serialization.PrivateFormat.TraditionalOpenSSL, _NONE),
    "ec-pkcs8": EC_KEY.private_bytes(_PEM, serialization.PrivateFormat.PKCS8, _NONE),
    "openssh": ED_KEY.private_bytes(_PEM, serialization.PrivateFormat.OpenSSH, _NONE),
}


@pytest.mark.parametrize("kind", list(PEM_KEYS))
def test_a_base64_encoded_pem_key_is_withheld_on_one_line(kind: str) -> None:
    encoded = _b64(PEM_KEYS[kind])
    text = f"users:\n- name: deploy\n  user:\n    client-key-data: {encoded}\n"
    _assert_withheld(text, encoded)


@pytest.mark.parametrize("kind", list(PEM_KEYS))
def test_a_base64_encoded_pem_key_wrapped_across_lines_is_withheld(kind: str) -> None:
    encoded = _b64(PEM_KEYS[kind])
    text = "DEPLOY_KEY_B64: |\n" + _wrapped(encoded, "  ") + "REGION: north\n"
    _assert_withheld(text, encoded)
    assert redact(text)[0].endswith("REGION: north\n")


def test_a_pem_key_encoded_after_other_text_is_found_at_any_alignment() -> None:
    for lead in (b"", b"#", b"# a"):
        encoded = _b64(lead + b"\n" + PEM_KEYS["ec-pkcs8"])
        _assert_withheld(f"blob = {encoded}\n", encoded)


def _jwk(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> dict[str, str]:
    if isinstance(key, rsa.RSAPrivateKey):
        found = jwt.algorithms.RSAAlgorithm.to_jwk(key, as_dict=True)
    else:
        found = jwt.algorithms.ECAlgorithm.to_jwk(key, as_dict=True)
    return {name: str(value) for name, value in found.items()}


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "pretty"])
def test_a_base64_encoded_private_jwks_is_withheld(indent: int | None) -> None:
    encoded = _b64(json.dumps({"keys": [_jwk(EC_KEY), _jwk(RSA_KEY)]}, indent=indent).encode())
    _assert_withheld(f'JWKS_B64="{encoded}"\n', encoded)
    _assert_withheld("jwks: |\n" + _wrapped(encoded, "  "), encoded)


def test_a_base64_encoded_jwt_is_withheld() -> None:
    hmac_key = "an HMAC key of my own, long enough for SHA-256"
    token = jwt.encode({"sub": "deploy", "n": secrets.token_hex(8)}, hmac_key, "HS256")
    encoded = _b64(token.encode())
    _assert_withheld(f"session_blob: {encoded}\n", encoded)


BASIC_SHAPES = [
    "Authorization: Basic {b}\n",
    'curl -H "authorization: Basic {b}" https://registry.example.org/v2/\n',
    'proxy_header = "basic {b}"\n',
    "  - BASIC {b}\n",
]


@pytest.mark.parametrize("shape", BASIC_SHAPES)
def test_base64_of_a_user_and_password_after_basic_is_withheld(shape: str) -> None:
    for password in (secrets.token_urlsafe(12), "plain words 4 me"):
        encoded = _b64(f"deploy:{password}".encode())
        redacted, findings = redact(shape.format(b=encoded))
        assert encoded not in redacted and findings


@pytest.mark.parametrize(
    "text",
    [
        "Basic configuration of the server\n",
        "Basic usage: call run() first\n",
        "Authorization: Basic " + _b64(b"user:password") + "\n",
        "Authorization: Basic " + _b64(b"deploy:deploy") + "\n",
        "Basic " + _b64(secrets.token_bytes(18)) + "\n",
    ],
    ids=["prose", "prose-with-colon", "placeholder", "user-as-password", "random-bytes"],
)
def test_what_follows_basic_without_a_credential_is_served(text: str) -> None:
    assert redact(text) == (text, ())


DER_KEYS = {
    "rsa-pkcs1": RSA_KEY.private_bytes(_DER, serialization.PrivateFormat.TraditionalOpenSSL, _NONE),
    "rsa-pkcs8": RSA_KEY.private_bytes(_DER, serialization.PrivateFormat.PKCS8, _NONE),
    "ec-sec1": EC_KEY.private_bytes(_DER, serialization.PrivateFormat.TraditionalOpenSSL, _NONE),
    "ec-pkcs8": EC_KEY.private_bytes(_DER, serialization.PrivateFormat.PKCS8, _NONE),
    "ed25519-pkcs8": ED_KEY.private_bytes(_DER, serialization.PrivateFormat.PKCS8, _NONE),
}


@pytest.mark.parametrize("kind", list(DER_KEYS))
def test_a_bare_base64_der_private_key_is_withheld(kind: str) -> None:
    encoded = _b64(DER_KEYS[kind])
    _assert_withheld(f"signing.material={encoded}\n", encoded)
    xml = "<config>\n  <blob>\n" + _wrapped(encoded, "    ", 64) + "  </blob>\n</config>\n"
    _assert_withheld(xml, encoded)
    assert redact(xml)[0].endswith("  </blob>\n</config>\n")


def _certificate() -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shapes.test")])
    now = __import__("datetime").datetime.now(__import__("datetime").timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(RSA_KEY.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + __import__("datetime").timedelta(days=1))
        .sign(RSA_KEY, hashes.SHA256())
    )


def test_encoded_public_material_and_images_are_served() -> None:
    certificate = _certificate()
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    served = [
        _b64(certificate.public_bytes(_DER)),
        _b64(certificate.public_bytes(_PEM)),
        _b64(RSA_KEY.public_key().public_bytes(_DER, spki)),
        _b64(EC_KEY.public_key().public_bytes(_PEM, spki)),
        _b64(json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "x": "a" * 43}]}).encode()),
        _b64(b"\x89PNG\r\n\x1a\n" + secrets.token_bytes(600)),
        "MII" + _b64(secrets.token_bytes(300)),  # starts like a key, is not one
    ]
    text = "".join(f"value_{n} = {value}\n" for n, value in enumerate(served))
    text += "tls.crt: |\n" + _wrapped(served[0], "  ")
    assert find_secrets(text) == []


def test_a_der_key_prefix_without_its_declared_length_is_served() -> None:
    encoded = _b64(DER_KEYS["rsa-pkcs1"][:200])  # a key's first bytes only: not a key
    text = f"fragment = {encoded}\n"
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    "hostile",
    [
        "LS0tLS1CRUdJT" * 80_000,
        "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t\n" * 28_000,
        " MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 30_000,
        ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 2 + "\n") * 15_000,
        "ZXlKaGJHY2lPaUpJVXpJMU5pSjku" * 36_000,
    ],
    ids=["pem-marker-run", "pem-marker-lines", "der-heads", "der-wrapped", "jwt-run"],
)
def test_a_megabyte_of_encoded_markers_is_scanned_in_bounded_time(hostile: str) -> None:
    started = time.process_time()
    find_secrets(hostile)
    # Linear work takes well under a second here; quadratic work on a megabyte takes minutes.
    assert time.process_time() - started < 10
