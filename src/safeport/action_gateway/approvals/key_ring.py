"""The enrolled security keys and the approvals they sign: what `approval_factor = "key"` asks.

The keys (id, COSE public key, name, last signature counter) and the installation's relying
party id live in the vault, saved with it, so a process of the same user can neither add a key
nor roll a counter back without the vault's key. Each issued enrolment, removal or policy
challenge is used once and lives two minutes; each card is answered by a key once.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from fido2.utils import websafe_decode, websafe_encode

from safeport.action_gateway.approvals.key_checks import (
    EnrolledKey,
    KeyRefused,
    admin_challenge,
    card_challenge,
    verify_assertion,
    verify_registration,
)
from safeport.action_gateway.policy.approval_factor import key_factor
from safeport.action_gateway.policy.store import PolicyStore
from safeport.errors import Denied, Error
from safeport.shared.audit import JournalBody
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.key_wire import (
    KeyAssertion,
    KeyChallengeResult,
    KeyChoice,
    KeyRegistration,
    KeyRequest,
)
from safeport.shared.schemas.results import CardView
from safeport.vault.interface import UnlockedVault

CHALLENGE_S = 120.0


class CurrentVault(Protocol):
    def current(self) -> tuple[UnlockedVault, int]: ...


class KeyRequired(Denied):
    """A yes (or a change) that only an enrolled key's touch may give."""


@dataclass(frozen=True)
class KeyRing:
    rp_id: str
    user_id: bytes
    keys: tuple[EnrolledKey, ...]

    def text(self) -> str:
        return json.dumps(
            {
                "rp_id": self.rp_id,
                "user_id": websafe_encode(self.user_id),
                "keys": [key.as_json() for key in self.keys],
            },
            sort_keys=True,
        )

    @classmethod
    def parse(cls, text: str) -> KeyRing:
        raw = json.loads(text)
        return cls(
            rp_id=str(raw["rp_id"]),
            user_id=websafe_decode(str(raw["user_id"])),
            keys=tuple(EnrolledKey.from_json(item) for item in raw["keys"]),
        )

    @classmethod
    def new(cls) -> KeyRing:
        # An id of this installation's own: a key enrolled here signs for nothing else.
        return cls(f"gw-{secrets.token_hex(6)}.safeport.invalid", secrets.token_bytes(16), ())


class KeyApprovals:
    def __init__(
        self,
        vault: CurrentVault,
        policies: PolicyStore,
        saved: Callable[[str, JournalBody, UnlockedVault], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._vaults = vault
        self._policies = policies
        # Journals each save with the vault generation it reached: a vault put back to roll a
        # counter back is then a rollback the journal shows.
        self._record_save = saved
        self._clock = clock
        self._lock = threading.Lock()
        self._issued: dict[tuple[str, str], tuple[str, float]] = {}
        self._answered: dict[str, int] = {}  # card id -> its expiry: answered once

    # -- reading ----------------------------------------------------------------------------

    def ring(self) -> KeyRing | None:
        text = self._vault().approver_keys()
        return KeyRing.parse(text) if text else None

    def enrolled(self) -> tuple[EnrolledKey, ...]:
        ring = self.ring()
        return ring.keys if ring else ()

    def factor_in_use(self, credential: str | None = None) -> bool:
        return key_factor(self.served_policy(), credential)

    def card_request(self, card: CardView) -> KeyRequest | None:
        """What the approver's key must sign for a yes to ``card`` (None: no key needed)."""
        if not self.factor_in_use(card.credential):
            return None
        try:
            ring = self.ring() or KeyRing("", b"", ())
        except Error:  # locked this moment: the yes fails closed (check_card reads it again)
            ring = KeyRing("", b"", ())
        return self._request(ring, _card_challenge(card))

    # -- cards ------------------------------------------------------------------------------

    def check_card(self, card: CardView, assertion: KeyAssertion | None) -> None:
        """Raise unless ``assertion`` is an enrolled key's first answer to ``card``."""
        if assertion is None:
            raise KeyRequired(
                f"credential {card.credential} is approved with a security key: the "
                "passphrase alone does not approve it",
                hint="answer it in `sp approvals watch` (or `sp approvals approve`) and touch "
                "your enrolled key",
            )
        card_id, expires = card.id, card.expires_unix
        now = time.time()
        if expires < now:
            raise KeyRefused("the card expired before the key's answer arrived")
        with self._lock:
            if card_id in self._answered:
                raise KeyRefused("this card was already answered by a key")
            self._verify(assertion, _card_challenge(card))
            # An expired card can no longer be answered at all, so it need not be remembered.
            self._answered = {k: v for k, v in self._answered.items() if v >= now}
            self._answered[card_id] = expires

    # -- enrolment, removal and policy -------------------------------------------------------

    def challenge(self, purpose: str, subject: str) -> KeyChallengeResult:
        ring = self.ring()
        if ring is None:  # the installation's relying party is chosen once, with the first key
            ring = KeyRing.new()
            self._save(ring)
        nonce = secrets.token_hex(16)
        with self._lock:
            now = self._clock()
            self._issued = {k: v for k, v in self._issued.items() if v[1] > now}
            self._issued[(purpose, subject)] = (nonce, now + CHALLENGE_S)
        return KeyChallengeResult(
            request=self._request(ring, admin_challenge(purpose, subject, nonce)),
            user_id=websafe_encode(ring.user_id),
            expires_in_s=int(CHALLENGE_S),
        )

    def needs_key(self) -> bool:
        """Whether a change (enrol, remove, turning the factor off) needs an enrolled key."""
        return bool(self.enrolled())

    def prove(self, purpose: str, subject: str, assertion: KeyAssertion | None) -> None:
        """An enrolled key's touch over the challenge issued for ``purpose`` and ``subject``."""
        if assertion is None:
            raise KeyRequired(
                "a security key is enrolled: this change needs a touch of one, the passphrase "
                "alone does not make it"
            )
        with self._lock:
            self._verify(assertion, self._take(purpose, subject, keep=purpose == "enroll"))

    def enroll(self, name: str, registration: KeyRegistration) -> EnrolledKey:
        with self._lock:
            challenge = self._take("enroll", name, keep=False)
            ring = self.ring()
            if ring is None:
                raise KeyRefused("no challenge was issued for this enrolment; retry")
            response = {
                "type": "public-key",
                "response": {
                    "clientDataJSON": registration.client_data,
                    "attestationObject": registration.attestation_object,
                },
            }
            credential_id, public_key, counter = verify_registration(
                ring.rp_id, ring.user_id, response, challenge
            )
            if any(key.id == credential_id for key in ring.keys):
                raise KeyRefused("this key is already enrolled")
            key = EnrolledKey(credential_id, name, public_key, counter, _now())
            self._save(replace(ring, keys=(*ring.keys, key)))
            self._saved("approver.key_enrolled", {"key": key.id, "name": name})
        return key

    def remove(self, key_id: str) -> None:
        with self._lock:
            ring = self.ring()
            if ring is None or all(key.id != key_id for key in ring.keys):
                raise KeyRefused(f"no enrolled key {key_id}", hint="`sp approver list`")
            left = tuple(key for key in ring.keys if key.id != key_id)
            if not left and self.factor_in_use():
                raise KeyRefused(
                    "this is the last enrolled key and the policy approves with a key",
                    hint='enrol another first, or accept a policy without approval_factor = "key"',
                )
            self._save(replace(ring, keys=left))
            self._saved("approver.key_removed", {"key": key_id})

    # -- internals --------------------------------------------------------------------------

    def _vault(self) -> UnlockedVault:
        return self._vaults.current()[0]

    def served_policy(self) -> GatewayPolicy | None:
        served = self._policies.served
        return served.policy if served else None

    def _saved(self, kind: str, body: JournalBody) -> None:
        self._record_save(kind, body, self._vault())

    def _request(self, ring: KeyRing, challenge: bytes) -> KeyRequest:
        policy = self.served_policy()
        return KeyRequest(
            rp_id=ring.rp_id,
            challenge=websafe_encode(challenge),
            user_verification=bool(policy and policy.approvals.user_verification),
            keys=[KeyChoice(id=key.id, name=key.name) for key in ring.keys],
        )

    def _take(self, purpose: str, subject: str, *, keep: bool) -> bytes:
        """The challenge issued for (purpose, subject), used once. Caller holds the lock."""
        issued = self._issued.get((purpose, subject))
        if issued is None or issued[1] < self._clock():
            raise KeyRefused("no challenge was issued for this change, or it expired; retry")
        if not keep:
            del self._issued[(purpose, subject)]
        return admin_challenge(purpose, subject, issued[0])

    def _verify(self, assertion: KeyAssertion, challenge: bytes) -> None:
        """Caller holds the lock."""
        ring = self.ring()
        if ring is None or not ring.keys:
            raise KeyRefused("no security key is enrolled", hint="`sp approver enroll`")
        policy = self.served_policy()
        response = _with_id(
            {
                "response": {
                    "clientDataJSON": assertion.client_data,
                    "authenticatorData": assertion.authenticator_data,
                    "signature": assertion.signature,
                },
                "type": "public-key",
            },
            assertion.credential_id,
        )
        uv = bool(policy and policy.approvals.user_verification)
        used = verify_assertion(ring.rp_id, ring.keys, response, challenge, user_verification=uv)
        self._save(replace(ring, keys=tuple(used if k.id == used.id else k for k in ring.keys)))
        self._saved("approver.key_used", {"key": used.id, "counter": used.counter})

    def _save(self, ring: KeyRing) -> None:
        self._vault().record_approver_keys(ring.text())


def _card_challenge(card: CardView) -> bytes:
    return card_challenge(card.id, card.prepared_sha256, card.requester_sha256, card.expires_unix)


def _with_id(response: dict[str, object], credential_id: str | None = None) -> dict[str, object]:
    if credential_id is not None:
        response["id"] = response["rawId"] = credential_id
    return response


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
