"""Public key material is served, private key material never: certificates, requests and public
keys by their content, SSH public key files unless they hold a private key; every name that is a
secret by name stays refused by name."""

from __future__ import annotations

import pytest

from safeport.context_server.policy.public_material import (
    MAX_JUDGED_BYTES,
    holds_only_public_material,
)
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.shared.secret_scan import redact
from tests.context_server.policy.material import der_body, material

POLICY = ReadPolicy()


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("authorized_keys", "ssh-public-keys"),
        ("known_hosts", "ssh-public-keys"),
        ("id_rsa.pub", "ssh-public-keys"),
        ("ID_ED25519.PUB", "ssh-public-keys"),
        ("id_ed25519-cert.pub", "ssh-public-keys"),
        ("ci_rsa.pub", "ssh-public-keys"),
        ("ssh_host_ed25519_key.pub", "ssh-public-keys"),
        ("ssh_host_rsa_key-cert.pub", "ssh-public-keys"),
        ("server.pem", "certificates"),
        ("fullchain.pem", "certificates"),
        ("ca.crt", "certificates"),
        ("CA.CRT", "certificates"),
        ("ca.crt.txt", "certificates"),
        ("client.cer", "certificates"),
        ("client.csr", "certificates"),
    ],
)
def test_public_material_names_are_not_private_by_name_and_their_content_decides(
    name: str, rule: str
) -> None:
    assert POLICY.name_verdict(name, "file") is None
    assert POLICY.public_rule(name) == rule


@pytest.mark.parametrize(
    "name",
    [
        "id_rsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_rsa_old",
        "ssh_host_ed25519_key",
        "ssh_host_rsa_key",
        "deploy_ed25519",
        "tls.key",
        "x.key.pem",
        "server.pem.key",
        "server.pem.bak",
        "signing.pem.2019",
        "id_rsa.pub~",
        "id_rsa.pub.bak",
        "store.p12",
        "store.pfx",
        "app.keystore",
        "cert.der",
        "deploy.ppk",
        "secring.pub",
        ".env",
        ".env.pub",
        "credentials",
        "prod-secrets.pem.json",
    ],
)
def test_names_that_are_secrets_by_name_stay_refused_by_name(name: str) -> None:
    assert POLICY.name_verdict(name, "file") == "private"
    assert POLICY.is_private_name(name)


def test_a_person_who_hides_certificates_still_can() -> None:
    tightened = POLICY.tightened(patterns=["*.pem", "authorized_keys", "*.pub"])
    for name in ("server.pem", "authorized_keys", "id_rsa.pub"):
        assert tightened.is_private_name(name), name


def _one_line(pem: str) -> str:
    lines = pem.splitlines()
    return "\n".join([lines[0], "".join(lines[1:-1]), lines[-1]]) + "\n"


def _bundle() -> list[tuple[str, str]]:
    m = material()
    curl_like = (
        "##\n## Bundle of CA Root Certificates\n##\n"
        "## SHA256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n\n"
        "Example Root CA\n===============\n" + m.certificate
    )
    return [
        ("one certificate", m.certificate),
        ("a chain", m.certificate + m.certificate),
        ("a request", m.request),
        (
            "an old request label",
            m.request.replace("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"),
        ),
        ("a public key", m.public_key),
        ("an RSA public key", m.rsa_public_key),
        ("all of them", m.certificate + "\n" + m.request + m.public_key + m.rsa_public_key),
        ("a bundle with comments", curl_like),
        ("Windows line ends", m.certificate.replace("\n", "\r\n")),
        ("a body on one line", _one_line(m.certificate)),
        ("indented in a listing", "subject=CN = svc\nissuer=CN = svc\n" + m.certificate),
    ]


@pytest.mark.parametrize(("what", "text"), _bundle(), ids=[w for w, _ in _bundle()])
def test_certificates_requests_and_public_keys_are_served(what: str, text: str) -> None:
    assert holds_only_public_material(text.encode(), "certificates"), what
    assert POLICY.content_verdict("ca.pem", text.encode(), len(text.encode())) is None


def _private_variants() -> list[tuple[str, str]]:
    m = material()
    cert = m.certificate
    body = m.body(m.pkcs8)
    return [
        ("certificate then PKCS#8 key", cert + m.pkcs8),
        ("PKCS#8 key then certificate", m.pkcs8 + cert),
        ("RSA key", cert + m.pkcs1),
        ("EC key", m.ec_private + cert),
        ("encrypted key", cert + m.encrypted),
        ("OpenSSH key", cert + m.openssh_private),
        ("a key alone", m.pkcs8),
        ("key relabelled CERTIFICATE", m.relabelled(m.pkcs8, "CERTIFICATE")),
        ("key relabelled PUBLIC KEY", m.relabelled(m.pkcs8, "PUBLIC KEY")),
        ("RSA key relabelled RSA PUBLIC KEY", m.relabelled(m.pkcs1, "RSA PUBLIC KEY")),
        ("key relabelled CERTIFICATE REQUEST", m.relabelled(m.pkcs8, "CERTIFICATE REQUEST")),
        ("key under an unknown label", m.relabelled(m.pkcs8, "X509 CRL")),
        ("key under TRUSTED CERTIFICATE", m.relabelled(m.pkcs8, "TRUSTED CERTIFICATE")),
        ("key body with no armour", cert + body + "\n"),
        ("key body, one long line", cert + body.replace("\n", "") + "\n"),
        ("a key on one line", cert + _one_line(m.pkcs8)),
        ("a block with no END", cert + "-----BEGIN PRIVATE KEY-----\n" + body + "\n"),
        ("a mismatched END", cert.replace("END CERTIFICATE", "END PUBLIC KEY")),
        ("lower-case armour", cert + m.pkcs8.lower()),
        ("four dashes", cert + m.pkcs8.replace("-----", "----")),
        ("a header in the block", cert.replace("\n", "\nProc-Type: 4,ENCRYPTED\n", 1)),
        ("a torn certificate", cert[: len(cert) // 2] + "\n-----END CERTIFICATE-----\n"),
        ("a text dump of a key", cert + "Private-Key: (2048 bit, 2 primes)\nmodulus:\n 00:c3\n"),
        ("an EC dump", cert + "priv:\n    3f:2a:11\n"),
        ("a PuTTY key", cert + "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"),
        ("OpenSSH body, no armour", cert + m.body(m.openssh_private).replace("\n", "") + "\n"),
        ("nothing at all", ""),
        ("prose only", "the certificate is in the vault\n"),
        ("DER bytes", der_body(cert).decode("latin-1")),
    ]


@pytest.mark.parametrize(
    ("what", "text"), _private_variants(), ids=[w for w, _ in _private_variants()]
)
def test_a_certificate_file_with_any_private_or_unparseable_part_is_refused(
    what: str, text: str
) -> None:
    data = text.encode("utf-8", "surrogateescape")
    assert not holds_only_public_material(data, "certificates"), what
    assert POLICY.content_verdict("server.pem", data, len(data)) == "private", what


def test_bytes_that_are_not_the_whole_file_or_not_text_are_refused() -> None:
    cert = material().certificate.encode()
    assert POLICY.content_verdict("ca.crt", cert, len(cert) + 1) == "private"  # grew: not judged
    assert not holds_only_public_material(cert + b"\x00", "certificates")
    assert not holds_only_public_material(cert + b"\xff\xfe\n", "certificates")
    padded = cert + b"# pad\n" * ((MAX_JUDGED_BYTES - len(cert)) // 6 + 1)
    assert len(padded) > MAX_JUDGED_BYTES and not holds_only_public_material(padded, "certificates")


def _ssh_public_files() -> list[tuple[str, str]]:
    line = material().ssh_public
    return [
        ("a key file", line + " ops@build\n"),
        (
            "authorized_keys with options and comments",
            "# deploy keys, rotated monthly\n"
            f'from="10.0.0.0/8",no-pty,command="/usr/bin/backup" {line} backup@ci\n\n'
            f"{line} ops@laptop\n",
        ),
        ("known_hosts", f"git.example.test,192.0.2.7 {line}\n|1|c2FsdA==|aGFzaA== {line}\n"),
        ("a PEM public key", material().public_key),
        ("a private host named so", f"privatehost.example.test {line}\n"),
    ]


@pytest.mark.parametrize(
    ("what", "text"), _ssh_public_files(), ids=[w for w, _ in _ssh_public_files()]
)
def test_ssh_public_key_files_are_served(what: str, text: str) -> None:
    assert holds_only_public_material(text.encode(), "ssh-public-keys"), what
    assert POLICY.content_verdict("authorized_keys", text.encode(), len(text.encode())) is None


def _ssh_private_files() -> list[tuple[str, str]]:
    m = material()
    return [
        ("an OpenSSH private key named .pub", m.openssh_private),
        ("a PEM private key named .pub", m.pkcs1),
        ("a key after the public line", m.ssh_public + "\n" + m.pkcs8),
        ("an OpenSSH body without armour", m.body(m.openssh_private) + "\n"),
        ("a PKCS#8 body without armour", m.body(m.pkcs8) + "\n"),
        ("a PuTTY key", "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAA\n"),
        ("an unknown armour", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nAAAA\n"),
    ]


@pytest.mark.parametrize(
    ("what", "text"), _ssh_private_files(), ids=[w for w, _ in _ssh_private_files()]
)
def test_a_private_key_under_a_public_key_name_is_refused(what: str, text: str) -> None:
    for name in ("x.pub", "id_ed25519.pub", "authorized_keys", "known_hosts"):
        data = text.encode()
        assert POLICY.content_verdict(name, data, len(data)) == "private", (what, name)


def test_names_whose_content_does_not_decide_are_never_judged_by_it() -> None:
    key = material().pkcs8.encode()
    # Such a file's key block is the detector's to withhold, as in any text file.
    for name in ("notes.md", "app.py", "README"):
        assert POLICY.public_rule(name) is None
        assert POLICY.content_verdict(name, key, len(key)) is None


@pytest.mark.parametrize("form", ["openssh_private", "pkcs8", "pkcs1", "ec_private", "encrypted"])
def test_the_detector_alone_also_withholds_a_private_key_saved_under_a_public_name(
    form: str,
) -> None:
    # The second line: were a `.pub` or `.pem` ever served, the key block in it is withheld.
    key = getattr(material(), form)
    text = f"{material().ssh_public} ops\n{key}"
    served, findings = redact(text)
    assert [f.kind for f in findings] == ["private-key"]
    body = [line for line in key.splitlines() if not line.startswith("-----")]
    assert not [line for line in body if line in served]
    assert served.startswith(material().ssh_public)
