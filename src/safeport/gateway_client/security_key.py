"""The approver's security key: found, asked to register, and asked to sign a card's challenge.

python-fido2's client stack does the work: ``Fido2Client`` builds the client data (type,
challenge, origin) and speaks CTAP2 to the key. The key is the first USB HID FIDO device, or
the authenticator behind ``SAFEPORT_SECURITY_KEY_SOCKET`` when that names a socket
(:mod:`ctap_socket`). Whatever answers, the gateway verifies: a key that is not enrolled, or a
signature over anything but the card's challenge, approves nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapDevice, CtapError
from fido2.ctap2.base import Ctap2
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    CollectedClientData,
    PublicKeyCredentialCreationOptions,
    PublicKeyCredentialDescriptor,
    PublicKeyCredentialParameters,
    PublicKeyCredentialRequestOptions,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
    UserVerificationRequirement,
)

from safeport.errors import Denied, EnvironmentProblem
from safeport.gateway_client.ctap_socket import SOCKET_VARIABLE, SocketCtapDevice
from safeport.shared.schemas.key_wire import (
    KeyAssertion,
    KeyChallengeResult,
    KeyChoice,
    KeyRegistration,
    KeyRequest,
    origin_of,
)

_T = TypeVar("_T")
TOUCH_TIMEOUT_S = 30.0
ES256 = -7


class NoSecurityKey(EnvironmentProblem):
    """No authenticator answers where the approver looks for one."""

    def diagnostic(self) -> str:
        return (
            f"{self.message}: plug in your security key (or set {SOCKET_VARIABLE} to the "
            "socket of your authenticator) and answer again"
        )


class KeyNotTouched(Denied):
    """The key was not touched in time, or refused: nothing was approved."""


def visible_keys() -> list[CtapDevice]:
    """The authenticators this process can reach: the named socket, then USB HID keys."""
    found: list[CtapDevice] = list(SocketCtapDevice.list_devices())
    if os.environ.get(SOCKET_VARIABLE):
        return found  # the approver chose one: USB is not searched behind its back
    try:
        from fido2.hid import CtapHidDevice

        found.extend(CtapHidDevice.list_devices())
    except (OSError, ImportError):  # no hidraw on this system
        pass
    return found


class KeySigner:
    """One authenticator, driven through python-fido2's ``Fido2Client``."""

    def __init__(
        self,
        device: CtapDevice,
        *,
        on_touch: Callable[[], None] = lambda: None,
        ask_pin: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._ask_pin = ask_pin
        self._device = device
        self._on_touch = on_touch

    def register(self, issued: KeyChallengeResult, name: str) -> KeyRegistration:
        """Make a credential for the gateway's relying party (one touch)."""
        request = issued.request
        options = PublicKeyCredentialCreationOptions(
            rp=PublicKeyCredentialRpEntity(name="safeport", id=request.rp_id),
            user=PublicKeyCredentialUserEntity(
                name=name, id=websafe_decode(issued.user_id), display_name=name
            ),
            challenge=websafe_decode(request.challenge),
            pub_key_cred_params=[
                PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=ES256)
            ],
            exclude_credentials=_descriptors(request.keys),
            timeout=int(TOUCH_TIMEOUT_S * 1000),
        )
        response = self._guarded(lambda client: client.make_credential(options))
        return KeyRegistration(
            client_data=websafe_encode(response.response.client_data),
            attestation_object=websafe_encode(response.response.attestation_object),
        )

    def sign(self, request: KeyRequest) -> KeyAssertion:
        """Sign ``request``'s challenge with one of its keys (one touch)."""
        if not request.keys:
            raise NoSecurityKey(
                "no security key is enrolled with the gateway (`sp approver enroll`)"
            )
        options = PublicKeyCredentialRequestOptions(
            challenge=websafe_decode(request.challenge),
            rp_id=request.rp_id,
            allow_credentials=_descriptors(request.keys),
            user_verification=UserVerificationRequirement.REQUIRED
            if request.user_verification
            else UserVerificationRequirement.DISCOURAGED,
            timeout=int(TOUCH_TIMEOUT_S * 1000),
        )
        selection = self._guarded(lambda client: client.get_assertion(options))
        response = selection.get_response(0)
        return KeyAssertion(
            credential_id=websafe_encode(response.raw_id),
            client_data=websafe_encode(response.response.client_data),
            authenticator_data=websafe_encode(response.response.authenticator_data),
            signature=websafe_encode(response.response.signature),
        )

    def holds(self, rp_id: str, keys: list[KeyChoice]) -> list[KeyChoice]:
        """Which of ``keys`` this authenticator holds, asked without a touch (``up`` false)."""
        held = []
        ctap = Ctap2(self._device)
        for key in keys:
            descriptor = {"type": "public-key", "id": websafe_decode(key.id)}
            try:
                ctap.get_assertion(rp_id, b"\0" * 32, [descriptor], options={"up": False})
            except CtapError:
                continue
            held.append(key)
        return held

    def _guarded(self, call: Callable[[Fido2Client], _T]) -> _T:
        try:
            client = Fido2Client(self._device, _Collector(), _Touch(self._on_touch, self._ask_pin))
            return call(client)
        except ClientError as exc:
            if exc.code == ClientError.ERR.TIMEOUT:
                raise KeyNotTouched(
                    "the security key was not touched in time; nothing was approved",
                    hint="answer the card again and touch the key when asked",
                ) from exc
            if exc.code == ClientError.ERR.DEVICE_INELIGIBLE:
                raise NoSecurityKey("this security key is not one the gateway enrolled") from exc
            raise KeyNotTouched(f"the security key refused: {exc.code.name.lower()}") from exc
        except (CtapError, OSError) as exc:
            raise NoSecurityKey(f"the security key could not be reached ({exc})") from exc


class _Touch(UserInteraction):
    """python-fido2 asks through this for a touch and, when the policy asks the key to verify
    its user and the key has a PIN rather than a fingerprint reader, for the PIN."""

    def __init__(self, on_touch: Callable[[], None], ask_pin: Callable[[], str | None]) -> None:
        self._on_touch = on_touch
        self._ask_pin = ask_pin

    def request_pin(self, permissions: object, rp_id: str | None) -> str | None:
        return self._ask_pin()

    def prompt_up(self) -> None:
        self._on_touch()


class _Collector(DefaultClientDataCollector):
    """python-fido2's client data, with the origin the gateway's relying party owns
    (:func:`origin_of`): the gateway accepts that origin and no other."""

    def __init__(self) -> None:
        super().__init__("", verify=lambda rp_id, origin: origin == origin_of(rp_id))

    def collect_client_data(
        self, options: PublicKeyCredentialCreationOptions | PublicKeyCredentialRequestOptions
    ) -> tuple[CollectedClientData, str]:
        if isinstance(options, PublicKeyCredentialCreationOptions):
            rp_id = options.rp.id
        else:
            rp_id = options.rp_id
        self._origin = origin_of(rp_id or "")
        collected: tuple[CollectedClientData, str] = super().collect_client_data(options)  # type: ignore[no-untyped-call]
        return collected


def _descriptors(keys: list[KeyChoice]) -> list[PublicKeyCredentialDescriptor]:
    return [
        PublicKeyCredentialDescriptor(
            type=PublicKeyCredentialType.PUBLIC_KEY, id=websafe_decode(k.id)
        )
        for k in keys
    ]
