"""Key body outside every block of a public key file, however it is laid out, refuses the
file: wrapped in short lines, split into groups by spaces, after a label or a comment mark, in
the comment of an SSH public key. So does a signing request carrying a challenge password.
Ordinary text around certificates and keys (titles, rules, fingerprints, paths, hosts,
options) is still served."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import AttributeOID, NameOID

from safeport.context_server.policy.public_material import holds_only_public_material
from safeport.context_server.policy.read_policy import ReadPolicy
from tests.context_server.policy.material import material

POLICY = ReadPolicy()


# Keys from fixed seeds: each run judges the same bytes.
def _der_key() -> str:
    scalar = int.from_bytes(hashlib.sha256(b"outside-blocks ec").digest(), "big") >> 8
    key = ec.derive_private_key(scalar, ec.SECP256R1())
    der = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return base64.b64encode(der).decode()


def _seed() -> str:
    seed = hashlib.sha256(b"outside-blocks ed25519").digest()
    raw = ed25519.Ed25519PrivateKey.from_private_bytes(seed).private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode()


def _wrapped(body: str, width: int, sep: str = "\n") -> str:
    return sep.join(body[i : i + width] for i in range(0, len(body), width)) + "\n"


def _certificate_files() -> list[tuple[str, str]]:
    cert = material().certificate
    body = _der_key()
    return [
        ("wrapped at 32", cert + _wrapped(body, 32)),
        ("wrapped at 39", cert + _wrapped(body, 39)),
        ("wrapped at 20 before", _wrapped(body, 20) + cert),
        ("groups split by spaces", cert + _wrapped(body, 20, " ")),
        ("groups split by tabs", cert + _wrapped(body, 16, "\t")),
        ("commented short lines", cert + "".join(f"# {x}\n" for x in _wrapped(body, 30).split())),
        ("a raw seed amid words", cert + f"copied {_seed()} from the vault\n"),
        ("a raw seed alone", cert + _seed() + "\n"),
    ]


def _ssh_files() -> list[tuple[str, str]]:
    line = material().ssh_public
    body = _der_key()
    return [
        ("a seed as the comment", f"{line} {_seed()}\n"),
        ("a seed after the comment", f"{line} ops@laptop {_seed()}\n"),
        ("key body in short lines", f"{line}\n" + _wrapped(body, 30)),
        ("groups after a key line", f"{line} ops\n" + _wrapped(body, 24, " ")),
        ("a seed in a known_hosts marker line", f"@cert-authority *.test {line} {_seed()}\n"),
    ]


@pytest.mark.parametrize(
    ("what", "text"), _certificate_files(), ids=[w for w, _ in _certificate_files()]
)
def test_key_body_outside_the_blocks_of_a_certificate_file_refuses_it(what: str, text: str) -> None:
    data = text.encode()
    assert not holds_only_public_material(data, "certificates"), what
    assert POLICY.content_verdict("fullchain.pem", data, len(data)) == "private", what


@pytest.mark.parametrize(("what", "text"), _ssh_files(), ids=[w for w, _ in _ssh_files()])
def test_key_body_beside_an_ssh_public_key_refuses_the_file(what: str, text: str) -> None:
    data = text.encode()
    assert not holds_only_public_material(data, "ssh-public-keys"), what
    for name in ("deploy.pub", "authorized_keys", "known_hosts"):
        assert POLICY.content_verdict(name, data, len(data)) == "private", (what, name)


def test_text_around_public_material_is_still_served() -> None:
    m = material()
    bundle = (
        "## Bundle of CA Root Certificates, converted from certdata.txt\n"
        "## SHA256: 3b4c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c\n\n"
        "Example_Root_CA_2026\n====================\n"
        "# Serial: 4835703278459707669005204\n"
        "# MD5 Fingerprint: 3e:45:52:15:09:51:92:e1:b7:5d:37:9f:b1:87:29:8a\n"
        "# Source: /usr/share/ca-certificates/mozilla/Example_Root_CA_2026.crt\n"
        + m.certificate
        + "\nIntermediate CA for the build cluster, issued 2026 for 825 days\n"
        + m.certificate
    )
    assert holds_only_public_material(bundle.encode(), "certificates")
    keys = (
        "# deploy keys\n"
        f'from="10.0.0.0/8",no-agent-forwarding {m.ssh_public} build-runner-07@ci.example.test\n'
        f"@cert-authority *.example.test {m.ssh_public}\n"
        f"{m.ssh_public} Ops Laptop 2026 (rotated quarterly)\n"
    )
    assert holds_only_public_material(keys.encode(), "ssh-public-keys")


def _request(attribute: tuple[x509.ObjectIdentifier, bytes] | None) -> bytes:
    key = ec.derive_private_key(7_919_000_013, ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "enrol.example.test")])
    builder = x509.CertificateSigningRequestBuilder().subject_name(name)
    builder = builder.add_extension(
        x509.SubjectAlternativeName([x509.DNSName("enrol.example.test")]), critical=False
    )
    if attribute is not None:
        builder = builder.add_attribute(*attribute)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize(
    "attribute",
    [
        (
            AttributeOID.CHALLENGE_PASSWORD,
            b"Enrol-" + hashlib.sha256(b"scep").hexdigest()[:20].encode(),
        ),
        (AttributeOID.UNSTRUCTURED_NAME, b"build-host-7"),
    ],
    ids=["challenge password", "another attribute"],
)
def test_a_signing_request_carrying_an_attribute_beyond_its_extensions_is_refused(
    attribute: tuple[x509.ObjectIdentifier, bytes],
) -> None:
    data = _request(attribute)
    assert not holds_only_public_material(data, "certificates")
    assert POLICY.content_verdict("enrol.csr", data, len(data)) == "private"


def test_a_signing_request_asking_for_extensions_is_still_served() -> None:
    data = _request(None)
    assert holds_only_public_material(data, "certificates")
    assert POLICY.content_verdict("enrol.csr", data, len(data)) is None
