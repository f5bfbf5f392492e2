"""What the gateway asks of a server for one action: a KV v2 value, or a signed SSH key.

Paths and roles come only from the accepted policy's credential (``CredentialOrigin``); nothing
here takes a proposal argument. Values become ``SecretBytes`` at once; what is journaled is an
:class:`Issued` record: where from, which version, serial, lease and TTL, never a value.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import hvac
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.openbao.client import translate_openbao_errors
from safeport.shared.schemas.config import Credential
from safeport.vault.secrets import BasicSecret, SecretBytes, SshKeySecret, TokenSecret

IssuedSecret = TokenSecret | BasicSecret | SshKeySecret


@dataclass(frozen=True)
class Issued:
    """A credential fetched for one action, and its journal form (no value in it)."""

    secret: IssuedSecret
    record: dict[str, object]
    lease_id: str | None = None


def read_kv(server_id: str, client: hvac.Client, credential: Credential) -> Issued:
    """The current version of the credential's KV v2 secret, one or two of its fields."""
    assert credential.kv_path is not None and credential.kv_field is not None
    with translate_openbao_errors(server_id, "the secret read"):
        answer: dict[str, Any] = client.secrets.kv.v2.read_secret_version(
            path=credential.kv_path,
            mount_point=credential.kv_mount,
            raise_on_deleted_version=True,
        )
    data = answer.get("data") or {}
    fields = data.get("data") or {}
    version = (data.get("metadata") or {}).get("version")
    value = fields.get(credential.kv_field)
    if not isinstance(value, str) or not value:
        raise ActionError(
            "source_refused",
            f"OpenBao server {server_id!r}: the secret has no text field {credential.kv_field!r}",
            hint="check kv_field in gateway.toml against the secret's fields",
        )
    record: dict[str, object] = {
        "source": server_id,
        "kv": f"{credential.kv_mount}/{credential.kv_path}",
        "field": credential.kv_field,
        "version": version if isinstance(version, int) else None,
    }
    if credential.kind == "basic":
        user = fields.get(credential.kv_username_field or "")
        if not isinstance(user, str) or not user:
            raise ActionError(
                "source_refused",
                f"OpenBao server {server_id!r}: the secret has no user name field "
                f"{credential.kv_username_field!r}",
            )
        return Issued(BasicSecret(user, SecretBytes(value.encode("utf-8"))), record)
    return Issued(TokenSecret(SecretBytes(value.encode("utf-8"))), record)


def sign_ssh_key(server_id: str, client: hvac.Client, credential: Credential, user: str) -> Issued:
    """A key pair made for this one action, its public half signed by the SSH engine for
    ``user`` (the host's login, from the policy) with the credential's TTL."""
    assert credential.ssh_role is not None
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    with translate_openbao_errors(server_id, "the certificate signing"):
        written = client.write_data(
            f"{credential.ssh_mount}/sign/{credential.ssh_role}",
            data={
                "public_key": public.decode("ascii"),
                "valid_principals": user,
                "cert_type": "user",
                "ttl": f"{credential.ttl_s}s",
            },
        )
    data = (written.get("data") if isinstance(written, dict) else None) or {}
    signed = data.get("signed_key")
    if not isinstance(signed, str) or "-cert-v01@openssh.com" not in signed.split(" ", 1)[0]:
        raise ActionError("source_refused", f"OpenBao server {server_id!r} signed no certificate")
    _check_certificate(server_id, signed, public, user, credential.ttl_s)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    secret = SshKeySecret(SecretBytes(private), certificate=signed.strip().encode("ascii"))
    record: dict[str, object] = {
        "source": server_id,
        "ssh_role": f"{credential.ssh_mount}/{credential.ssh_role}",
        "serial": str(data.get("serial_number", "")),
        "principals": [user],
        "ttl_s": credential.ttl_s,
    }
    return Issued(secret, record)


# OpenBao backdates a certificate's start (the role's not_before_duration, 30 s by default)
# against clock skew; its end is what bounds it, judged on this host's clock, which may be
# behind the server's by this much without a good certificate being refused.
_CLOCK_SLACK_S = 60


def _check_certificate(server_id: str, signed: str, public: bytes, user: str, ttl_s: int) -> None:
    """The certificate is for this key, this user alone, this TTL and no forced command: a role
    whose defaults add principals, a longer life or a critical option (``force-command`` runs
    another command than the approved one; the host would report its output as the action's)
    is refused, not used."""
    try:
        cert = serialization.load_ssh_public_identity(signed.strip().encode("ascii"))
    except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError):
        cert = None
    if not isinstance(cert, serialization.SSHCertificate):
        raise ActionError("source_refused", f"OpenBao server {server_id!r} signed no certificate")
    problems = []
    if (
        cert.type != serialization.SSHCertificateType.USER
        or cert.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        != public
    ):
        problems.append("another key or type")
    if cert.valid_principals != [user.encode("ascii")]:
        problems.append("other principals")
    if cert.valid_before > time.time() + ttl_s + _CLOCK_SLACK_S:
        problems.append("a longer life than ttl_s")
    problems += sorted(name.decode("ascii", "replace") for name in cert.critical_options)
    if problems:
        raise ActionError(
            "source_refused",
            f"OpenBao server {server_id!r} signed a certificate with {', '.join(problems)}",
            hint="set the SSH role's defaults to no critical options and a ttl within ttl_s",
        )


def read_database_role(server_id: str, client: hvac.Client, credential: Credential) -> Issued:
    """A login role the database engine creates for this one query, and the lease that ends it."""
    assert credential.database_role is not None
    path = f"{credential.database_mount}/creds/{credential.database_role}"
    with translate_openbao_errors(server_id, "the database role issue"):
        answer = client.read(path)
    if not isinstance(answer, dict):
        raise ActionError("source_refused", f"OpenBao server {server_id!r} issued no role")
    data = answer.get("data") or {}
    user, password, lease_id = data.get("username"), data.get("password"), answer.get("lease_id")
    if not (isinstance(user, str) and isinstance(password, str) and isinstance(lease_id, str)):
        raise ActionError("source_refused", f"OpenBao server {server_id!r} issued no role")
    record: dict[str, object] = {
        "source": server_id,
        "database_role": f"{credential.database_mount}/{credential.database_role}",
        "role": user,  # a generated name, not a secret: it shows in the database's own logs
        "lease_ttl_s": answer.get("lease_duration"),
    }
    return Issued(BasicSecret(user, SecretBytes(password.encode("utf-8"))), record, lease_id)


def revoke_lease(server_id: str, client: hvac.Client, lease_id: str) -> None:
    """Revoke ``lease_id`` now (raises :class:`ActionError` when the server would not)."""
    with translate_openbao_errors(server_id, "the lease revocation"):
        client.write_data("sys/leases/revoke", data={"lease_id": lease_id})
