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
from safeport.gateway_client.security_key import KeySigner, NoSecurityKey, visible_keys
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.key_wire import ApproverKeysResult, KeyChoice, KeyRequest
from safeport.vault.secrets import SecretBytes

# Asks for the passphrase only when the gateway needs it (no key is enrolled yet).
PassphraseSource = Callable[[], SecretBytes]


def enroll_key(
    client: GatewayClient,
    name: str,
    passphrase: PassphraseSource,
    *,
    on_touch: Callable[[], None] = lambda: None,
) -> str:
    """Register a new credential on a key that holds none yet; returns its id. With a key
    enrolled, one in reach must sign the change: one touch registers, the other approves."""
    enrolled = client.call(ops.APPROVER_KEYS)
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="enroll", subject=name)
    choices = issued.request.keys
    fresh = next(
        (KeySigner(d, on_touch=on_touch) for d in visible_keys()
         if not choices or not KeySigner(d).holds(issued.request.rp_id, choices)),
        None,
    )  # fmt: skip
    if fresh is None:
        raise NoSecurityKey("no security key without an enrolled credential is in reach")
    registration = fresh.register(issued, name).model_dump()
    if enrolled.keys:
        approver = signer_for(issued.request, on_touch=on_touch)
        assertion = approver.sign(issued.request).model_dump()
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


def remove_key(client: GatewayClient, key_id: str) -> None:
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="remove", subject=key_id)
    assertion = signer_for(issued.request).sign(issued.request).model_dump()
    client.call(ops.APPROVER_REMOVE, id=key_id, assertion=assertion)


def policy_assertion(client: GatewayClient, digest: str) -> dict[str, str]:
    """An enrolled key's touch over accepting the policy text whose digest is ``digest``."""
    issued = client.call(ops.APPROVER_KEY_CHALLENGE, purpose="policy", subject=digest)
    return signer_for(issued.request).sign(issued.request).model_dump()


def signer_for(
    request: KeyRequest,
    *,
    on_touch: Callable[[], None] = lambda: None,
    ask_pin: Callable[[], str | None] = lambda: None,
) -> KeySigner:
    """The first authenticator in reach that holds one of ``request``'s enrolled keys (asked
    without a touch), so a spare key plugged in beside it is never the one asked to sign."""
    for device in visible_keys():
        if KeySigner(device).holds(request.rp_id, request.keys):
            return KeySigner(device, on_touch=on_touch, ask_pin=ask_pin)
    if not request.keys:
        raise NoSecurityKey("no security key is enrolled with the gateway (`sp approver enroll`)")
    names = ", ".join(key.name for key in request.keys)
    raise NoSecurityKey(f"no security key found that holds an enrolled key ({names})")


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


def sign_card(
    key: dict[str, object], *, ask_pin: Callable[[], str | None] = lambda: None
) -> dict[str, str]:
    """The assertion that answers a card whose ``key`` block says what to sign (one touch of
    the enrolled key in reach; ``ask_pin`` for a key that verifies its user with a PIN)."""
    request = KeyRequest.model_validate(key)
    return signer_for(request, ask_pin=ask_pin).sign(request).model_dump()


def _describe(device: CtapDevice) -> str:
    path = getattr(device, "path", None) or getattr(
        getattr(device, "descriptor", None), "path", None
    )
    return str(path) if path else type(device).__name__
