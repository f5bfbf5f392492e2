"""`sp approver enroll|list|remove` and the doctor's look at the keys, over control.sock.

The first key is enrolled with the passphrase (read as every passphrase is, after the listener
check); later enrolments and removals are signed by an enrolled key's touch over a challenge
the gateway issues for that one change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fido2.ctap import CtapDevice

from safeport.gateway_client.control_socket import GatewayClient
from safeport.gateway_client.security_key import KeySigner, visible_keys
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.key_wire import ApproverKeysResult, KeyChoice, KeyRequest
from safeport.vault.secrets import SecretBytes

# Asks for the passphrase only when the gateway needs it (no key is enrolled yet).
PassphraseSource = Callable[[], SecretBytes]


def enroll_key(
    client: GatewayClient, signer: KeySigner, name: str, passphrase: PassphraseSource
) -> str:
    """Register a new credential on ``signer``'s key; returns its id. With a key enrolled,
    ``signer`` must also be an enrolled key: one touch registers, one signs the change."""
    enrolled = client.call(ops.APPROVER_KEYS)
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="enroll", subject=name)
    registration = signer.register(issued, name).model_dump()
    if enrolled.keys:
        assertion = signer.sign(issued.request).model_dump()
        done = client.call(
            ops.APPROVER_ENROLL, name=name, registration=registration, assertion=assertion
        )
        return done.id
    secret = passphrase()
    try:
        done = client.call_with_passphrase(
            ops.APPROVER_ENROLL, secret, name=name, registration=registration
        )
    finally:
        secret.wipe()
    return done.id


def remove_key(client: GatewayClient, signer: KeySigner, key_id: str) -> None:
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="remove", subject=key_id)
    assertion = signer.sign(issued.request).model_dump()
    client.call(ops.APPROVER_REMOVE, id=key_id, assertion=assertion)


def policy_assertion(client: GatewayClient, signer: KeySigner, digest: str) -> dict[str, str]:
    """An enrolled key's touch over accepting the policy text whose digest is ``digest``."""
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="policy", subject=digest)
    return signer.sign(issued.request).model_dump()


def list_keys(client: GatewayClient) -> ApproverKeysResult:
    return client.call(ops.APPROVER_KEYS)


@dataclass(frozen=True)
class SeenKey:
    """An authenticator this process reaches, and which enrolled keys it holds."""

    device: str
    holds: tuple[KeyChoice, ...]


def keys_seen(enrolled: ApproverKeysResult) -> list[SeenKey]:
    """Each visible authenticator, asked without a touch which enrolled credentials it holds."""
    choices = [KeyChoice(id=key.id, name=key.name) for key in enrolled.keys]
    seen = []
    for device in visible_keys():
        held: tuple[KeyChoice, ...] = ()
        if enrolled.rp_id and choices:
            held = tuple(KeySigner(device).holds(enrolled.rp_id, choices))
        seen.append(SeenKey(_describe(device), held))
    return seen


def sign_card(signer: KeySigner, key: dict[str, object]) -> dict[str, str]:
    """The assertion that answers a card whose ``key`` block says what to sign."""
    return signer.sign(KeyRequest.model_validate(key)).model_dump()


def _describe(device: CtapDevice) -> str:
    path = getattr(device, "path", None) or getattr(
        getattr(device, "descriptor", None), "path", None
    )
    return str(path) if path else type(device).__name__
