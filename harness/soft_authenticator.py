"""A software FIDO2 authenticator for tests: real P-256 keys, CTAP2 over python-fido2's device
interface, and a touch the test gives or withholds.

There is no USB key on a test machine. :class:`SoftAuthenticator` answers authenticatorGetInfo,
authenticatorMakeCredential and authenticatorGetAssertion (CBOR via ``fido2.cbor``) with keys it
generates, so python-fido2's real client stack (``Fido2Client``, its client data handling and
``Ctap2``) drives it as it would a key on USB. Its knobs make it misbehave the ways an attacker's
or a broken key would: the user-presence flag cleared, a counter going backwards, another
relying party's hash. :class:`AuthenticatorSocket` serves it on a unix socket so a real `sp`
process reaches it through ``SAFEPORT_SECURITY_KEY_SOCKET``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from threading import Event
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cbor
from fido2.cose import ES256
from fido2.ctap import STATUS, CtapDevice, CtapError
from fido2.hid import CAPABILITY, CTAPHID
from fido2.webauthn import (
    AttestationObject,
    AttestedCredentialData,
    AuthenticatorData,
)

from safeport.gateway_client.ctap_socket import frame, read_message

AAGUID = bytes.fromhex("5afe5afe5afe5afe5afe5afe5afe5afe")
_FLAG = AuthenticatorData.FLAG


@dataclass
class _Credential:
    rp_id: str
    key: ec.EllipticCurvePrivateKey
    counter: int = 0


@dataclass
class Knobs:
    """How the next answers misbehave (all off: an honest key)."""

    clear_up: bool = False  # sign without the user-presence flag
    counter_step: int = 1  # negative: the counter goes backwards
    rp_id: str | None = None  # sign for this relying party instead of the one asked
    counter_fixed: int | None = None  # report this counter (0: a key without a counter)
    ignore_allow_list: bool = False  # sign with its own key even when another is asked for
    built_in_uv: bool = False  # a fingerprint reader: verifies its user with each touch


@dataclass
class SoftAuthenticator(CtapDevice):
    """One authenticator; ``touch`` is set by the test when a human would touch it."""

    touch: Event = field(default_factory=Event)
    touch_wait_s: float = 5.0
    knobs: Knobs = field(default_factory=Knobs)
    credentials: dict[bytes, _Credential] = field(default_factory=dict)
    touches_used: int = 0

    @property
    def capabilities(self) -> int:
        return int(CAPABILITY.CBOR)

    def call(
        self,
        cmd: int,
        data: bytes = b"",
        event: Event | None = None,
        on_keepalive: Callable[[STATUS], None] | None = None,
    ) -> bytes:
        if cmd != CTAPHID.CBOR or not data:
            raise CtapError(CtapError.ERR.INVALID_COMMAND)
        request = cbor.decode(data[1:]) if len(data) > 1 else {}
        assert isinstance(request, dict)
        handlers: dict[int, Callable[[dict[int, Any], Callable[[], bool]], dict[int, Any]]] = {
            0x01: self._make_credential,
            0x02: self._get_assertion,
            0x04: lambda _request, _present: self._info(),
        }
        handler = handlers.get(data[0])
        if handler is None:
            return bytes([CtapError.ERR.INVALID_COMMAND])

        def present() -> bool:
            if on_keepalive is not None:
                on_keepalive(STATUS.UPNEEDED)
            touched = self.touch.wait(self.touch_wait_s)
            if touched:
                self.touch.clear()  # one touch, one signature
                self.touches_used += 1
            return touched

        try:
            return b"\x00" + cbor.encode(handler(request, present))
        except CtapError as exc:
            return bytes([exc.code])

    @classmethod
    def list_devices(cls) -> Iterator[CtapDevice]:
        return iter(())

    # -- CTAP2 commands -------------------------------------------------------------------------

    def _info(self) -> dict[int, Any]:
        options = {"rk": False, "up": True, "plat": False}
        info: dict[int, Any] = {1: ["FIDO_2_0"], 3: AAGUID, 4: options}
        if self.knobs.built_in_uv:  # CTAP 2.0's built-in verification, no PIN token
            options["uv"] = True
            info[6] = [1]
        return info

    def _make_credential(
        self, request: dict[int, Any], present: Callable[[], bool]
    ) -> dict[int, Any]:
        client_data_hash, rp, algorithms = request[1], request[2], request[4]
        if not any(item.get("alg") == ES256.ALGORITHM for item in algorithms):
            raise CtapError(CtapError.ERR.UNSUPPORTED_ALGORITHM)
        for excluded in request.get(5) or []:
            if excluded["id"] in self.credentials:
                present()
                raise CtapError(CtapError.ERR.CREDENTIAL_EXCLUDED)
        if not present():
            raise CtapError(CtapError.ERR.USER_ACTION_TIMEOUT)
        key = ec.generate_private_key(ec.SECP256R1())
        credential_id = os.urandom(32)
        self.credentials[credential_id] = _Credential(rp["id"], key)
        attested = AttestedCredentialData.create(
            AAGUID,
            credential_id,
            ES256.from_cryptography_key(key.public_key()),  # type: ignore[no-untyped-call]
        )
        auth_data = AuthenticatorData.create(_rp_hash(rp["id"]), _FLAG.UP | _FLAG.AT, 0, attested)
        del client_data_hash  # "none" attestation signs nothing
        attestation = AttestationObject.create("none", auth_data, {})
        return {1: attestation.fmt, 2: attestation.auth_data, 3: attestation.att_stmt}

    def _get_assertion(
        self, request: dict[int, Any], present: Callable[[], bool]
    ) -> dict[int, Any]:
        rp_id, client_data_hash = request[1], request[2]
        options = request.get(5) or {}
        mine = [
            item["id"]
            for item in request.get(3) or []
            if item["id"] in self.credentials and self.credentials[item["id"]].rp_id == rp_id
        ]
        if not mine and self.knobs.ignore_allow_list:
            mine = [cid for cid, cred in self.credentials.items() if cred.rp_id == rp_id]
        if not mine:
            raise CtapError(CtapError.ERR.NO_CREDENTIALS)
        credential_id = mine[0]
        stored = self.credentials[credential_id]
        wants_presence = options.get("up", True)
        flags = _FLAG(0)
        if wants_presence:
            if not present():
                raise CtapError(CtapError.ERR.USER_ACTION_TIMEOUT)
            if not self.knobs.clear_up:
                flags |= _FLAG.UP
            if options.get("uv") and self.knobs.built_in_uv:
                flags |= _FLAG.UV
        stored.counter = max(0, stored.counter + self.knobs.counter_step)
        counter = stored.counter if self.knobs.counter_fixed is None else self.knobs.counter_fixed
        auth_data = AuthenticatorData.create(_rp_hash(self.knobs.rp_id or rp_id), flags, counter)
        signature = stored.key.sign(auth_data + client_data_hash, ec.ECDSA(hashes.SHA256()))
        return {1: {"type": "public-key", "id": credential_id}, 2: auth_data, 3: signature}


def _rp_hash(rp_id: str) -> bytes:
    return hashlib.sha256(rp_id.encode("utf-8")).digest()


class AuthenticatorSocket:
    """Serves one :class:`SoftAuthenticator` on a unix socket, a connection per call."""

    def __init__(self, authenticator: SoftAuthenticator, path: Path) -> None:
        self.authenticator = authenticator
        self.path = path
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(4)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError, CtapError):
            kind, payload = read_message(conn)

            def keepalive(status: STATUS) -> None:
                conn.sendall(frame(CTAPHID.KEEPALIVE, bytes([status])))

            answer = self.authenticator.call(kind, payload, on_keepalive=keepalive)
            conn.sendall(frame(kind, answer))

    def close(self) -> None:
        self._server.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
