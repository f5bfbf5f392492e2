"""Key material made for the tests at run time with ``cryptography``: certificates, requests,
public keys and the private keys beside them, in the encodings people save them in."""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from functools import cache

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

PEM = serialization.Encoding.PEM
NO_PASSWORD = serialization.NoEncryption()


@dataclass(frozen=True)
class Material:
    certificate: str
    request: str
    public_key: str  # SubjectPublicKeyInfo
    rsa_public_key: str  # PKCS#1
    ssh_public: str  # one OpenSSH line
    pkcs8: str
    pkcs1: str  # "RSA PRIVATE KEY"
    ec_private: str  # "EC PRIVATE KEY"
    encrypted: str  # "ENCRYPTED PRIVATE KEY"
    openssh_private: str

    def body(self, pem: str) -> str:
        """The base64 body of a PEM block, without its armour lines."""
        return "\n".join(line for line in pem.splitlines() if not line.startswith("-----"))

    def relabelled(self, pem: str, label: str) -> str:
        return f"-----BEGIN {label}-----\n{self.body(pem)}\n-----END {label}-----\n"


@cache
def material() -> Material:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "svc.example.test")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1000)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    request = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    public = key.public_key()
    ed = ed25519.Ed25519PrivateKey.generate()
    return Material(
        certificate=cert.public_bytes(PEM).decode(),
        request=request.public_bytes(PEM).decode(),
        public_key=public.public_bytes(
            PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode(),
        rsa_public_key=public.public_bytes(PEM, serialization.PublicFormat.PKCS1).decode(),
        ssh_public=ed.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode(),
        pkcs8=key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, NO_PASSWORD).decode(),
        pkcs1=key.private_bytes(
            PEM, serialization.PrivateFormat.TraditionalOpenSSL, NO_PASSWORD
        ).decode(),
        ec_private=ec.generate_private_key(ec.SECP256R1())
        .private_bytes(PEM, serialization.PrivateFormat.TraditionalOpenSSL, NO_PASSWORD)
        .decode(),
        encrypted=key.private_bytes(
            PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"test-only-passphrase"),
        ).decode(),
        openssh_private=ed.private_bytes(
            PEM, serialization.PrivateFormat.OpenSSH, NO_PASSWORD
        ).decode(),
    )


def der_body(pem: str) -> bytes:
    return base64.b64decode("".join(x for x in pem.splitlines() if not x.startswith("-----")))
