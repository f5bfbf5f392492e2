"""The grant broker against a provider stand-in and a real vault: one refresh per grant at a
time, a rotated refresh token saved before its access token is used, a refused grant dead
without a retry loop, every access token wiped on lock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.oauth.broker import REFRESH_BEFORE_S, Access, GrantBroker
from safeport.action_gateway.oauth.errors import OAuthGrantDead, OAuthUnreachable
from safeport.errors import Error
from safeport.shared.audit import JournalBody, JournalHead
from safeport.vault import OpenVault
from safeport.vault.secrets import OAuthSecret, SecretBytes
from tests.vault.vault_factory import make_vault

FIRST_REFRESH = b"CANARY-REFRESH-1"


def _refused(what: str) -> OAuthGrantDead:
    return OAuthGrantDead(f"the provider refused the refresh token ({what})", error=what)


@dataclass(frozen=True)
class _Tokens:
    access_token: SecretBytes
    refresh_token: SecretBytes | None
    expires_in: int | None
    scopes: tuple[str, ...] | None


class _Provider:
    """Rotates on every refresh and refuses a refresh token it already took (as a provider with
    reuse detection does)."""

    def __init__(self, *, rotate: bool = True, expires_in: int | None = 3600) -> None:
        self.rotate = rotate
        self.expires_in = expires_in
        self.calls = 0
        self.spent: set[bytes] = set()
        self.issued: list[SecretBytes] = []
        self.refuse: Error | None = None
        self.revoked: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()

    def refresh(self, refresh_token: SecretBytes, client_secret: SecretBytes | None) -> _Tokens:
        with self._lock:
            self.calls += 1
            seen = refresh_token.reveal()
            if self.refuse is not None:
                raise self.refuse
            if seen in self.spent:
                raise _refused("invalid_grant")
            if self.rotate:
                self.spent.add(seen)
            access = SecretBytes(b"CANARY-ACCESS-%d" % self.calls)
            self.issued.append(access)
            new = SecretBytes(b"CANARY-REFRESH-%d" % (self.calls + 1)) if self.rotate else None
            return _Tokens(access.copy(), new, self.expires_in, None)

    def revoke(
        self,
        token: SecretBytes,
        hint: Literal["refresh_token", "access_token"],
        client_secret: SecretBytes | None,
    ) -> bool:
        self.revoked.append((hint, token.reveal()))
        return True


class _Journal:
    def __init__(self) -> None:
        self.records: list[tuple[str, JournalBody]] = []

    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead:
        self.records.append((kind, body))
        return JournalHead(seq=len(self.records), hash="0" * 64)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.records]


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def vault(tmp_path: Path) -> OpenVault:
    _, opened = make_vault(tmp_path)
    value: dict[str, SecretBytes | str] = {
        "refresh_token": SecretBytes(FIRST_REFRESH),
        "scopes": "read write",
    }
    opened.add("tracker", "oauth", {**value, "issuer": "https://idp.example"})
    return opened


def _stored_refresh(vault: OpenVault) -> bytes:
    secret = vault.secret("tracker")
    assert isinstance(secret, OAuthSecret) and secret.refresh_token is not None
    return secret.refresh_token.reveal()


def _at_once(count: int, work: Callable[[], Access]) -> list[Access | Exception]:
    barrier = threading.Barrier(count)
    results: list[Access | Exception] = [ValueError("not run")] * count

    def run(index: int) -> None:
        barrier.wait(timeout=10)
        try:
            results[index] = work()
        except Exception as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_twenty_actions_at_once_on_an_expired_token_cause_one_refresh(vault: OpenVault) -> None:
    provider, journal, clock = _Provider(), _Journal(), _Clock()
    broker = GrantBroker(journal, clock=clock)
    broker.access("tracker", provider, vault)
    clock.now += 3600 - REFRESH_BEFORE_S  # inside the margin: the token counts as expired
    results = _at_once(20, lambda: broker.access("tracker", provider, vault))
    assert provider.calls == 2  # the first token, then one refresh for all twenty
    tokens = {r.secret.token.reveal() for r in results if not isinstance(r, Exception)}
    assert tokens == {b"CANARY-ACCESS-2"}
    assert _stored_refresh(vault) == b"CANARY-REFRESH-3"
    assert journal.kinds() == ["oauth.refreshed", "oauth.refreshed"]


def test_a_token_well_before_its_expiry_is_reused(vault: OpenVault) -> None:
    provider, clock = _Provider(), _Clock()
    broker = GrantBroker(_Journal(), clock=clock)
    broker.access("tracker", provider, vault)
    clock.now += 3600 - REFRESH_BEFORE_S - 1
    assert broker.access("tracker", provider, vault).secret.token.reveal() == b"CANARY-ACCESS-1"
    assert provider.calls == 1


def test_a_rotated_refresh_token_is_saved_before_its_access_token_is_used(
    vault: OpenVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, journal = _Provider(), _Journal()
    broker = GrantBroker(journal)

    def save_fails(name: str, value: object) -> None:
        raise Error("the disk is full")

    monkeypatch.setattr(vault, "rotate", save_fails)
    with pytest.raises(Error, match="disk is full"):
        broker.access("tracker", provider, vault)
    assert provider.issued[0].reveal() == b"CANARY-ACCESS-1"  # minted, never handed out
    monkeypatch.undo()
    assert _stored_refresh(vault) == FIRST_REFRESH
    # Its access token was not kept either: the next action asks again (and the provider,
    # which saw its refresh token spent, says the grant is dead rather than serve it twice).
    with pytest.raises(ActionError) as caught:
        broker.access("tracker", provider, vault)
    assert caught.value.failure == "oauth_grant_dead"


def test_the_rotated_token_is_in_the_vault_when_the_access_token_is_handed_out(
    vault: OpenVault,
) -> None:
    provider = _Provider()
    GrantBroker(_Journal()).access("tracker", provider, vault)
    assert _stored_refresh(vault) == b"CANARY-REFRESH-2"
    secret = vault.secret("tracker")
    assert isinstance(secret, OAuthSecret)
    assert (secret.scopes, secret.issuer) == (("read", "write"), "https://idp.example")


def test_a_provider_that_does_not_rotate_leaves_the_entry_as_it_was(vault: OpenVault) -> None:
    provider, journal = _Provider(rotate=False), _Journal()
    before = next(e for e in vault.entries() if e.name == "tracker").rotated
    GrantBroker(journal).access("tracker", provider, vault)
    assert next(e for e in vault.entries() if e.name == "tracker").rotated == before
    assert journal.records[0][1]["rotated"] is False


@pytest.mark.parametrize("how", ["invalid_grant", "reused rotated token"])
def test_a_refused_grant_is_dead_and_never_asked_again(vault: OpenVault, how: str) -> None:
    provider, journal = _Provider(), _Journal()
    broker = GrantBroker(journal)
    if how == "invalid_grant":
        provider.refuse = _refused("invalid_grant")
    else:
        provider.spent.add(FIRST_REFRESH)  # another holder of the same token refreshed first
    for _ in range(3):
        with pytest.raises(ActionError) as caught:
            broker.access("tracker", provider, vault)
        assert caught.value.failure == "oauth_grant_dead"
        assert "sp oauth connect tracker" in caught.value.message
    assert provider.calls == 1
    assert [d.name for d in broker.dead()] == ["tracker"]
    assert journal.kinds() == ["oauth.grant_dead"]


def test_twenty_actions_on_a_dead_grant_cause_one_refused_refresh(vault: OpenVault) -> None:
    provider = _Provider()
    provider.refuse = _refused("invalid_grant")
    broker = GrantBroker(_Journal())
    results = _at_once(20, lambda: broker.access("tracker", provider, vault))
    assert provider.calls == 1
    assert all(isinstance(r, ActionError) and r.failure == "oauth_grant_dead" for r in results)


def test_another_refresh_failure_is_not_a_dead_grant(vault: OpenVault) -> None:
    provider, journal = _Provider(), _Journal()
    provider.refuse = OAuthUnreachable("the provider could not be reached")
    broker = GrantBroker(journal)
    with pytest.raises(ActionError, match="could not be refreshed") as caught:
        broker.access("tracker", provider, vault)
    assert caught.value.failure == "auth_failed"
    assert broker.dead() == [] and journal.kinds() == ["oauth.refresh_failed"]
    provider.refuse = None
    assert broker.access("tracker", provider, vault).secret.token.reveal() == b"CANARY-ACCESS-2"


def test_a_reconnected_grant_is_alive_again(vault: OpenVault) -> None:
    provider = _Provider()
    provider.refuse = _refused("invalid_grant")
    broker = GrantBroker(_Journal())
    with pytest.raises(ActionError):
        broker.access("tracker", provider, vault)
    provider.refuse = None
    broker.connected("tracker")
    assert broker.dead() == []
    assert broker.access("tracker", provider, vault).secret.token.reveal() == b"CANARY-ACCESS-2"


def test_a_401_refreshes_once_even_when_several_actions_saw_it(vault: OpenVault) -> None:
    provider = _Provider()
    broker = GrantBroker(_Journal())
    used = broker.access("tracker", provider, vault)
    results = _at_once(20, lambda: broker.after_unauthorized("tracker", provider, vault, used))
    assert provider.calls == 2
    assert {r.secret.token.reveal() for r in results if not isinstance(r, Exception)} == {
        b"CANARY-ACCESS-2"
    }


def test_a_401_on_a_lasting_access_token_means_the_grant_is_dead(tmp_path: Path) -> None:
    _, opened = make_vault(tmp_path)
    opened.add("gh", "oauth", {"access_token": SecretBytes(b"CANARY-LASTING"), "scopes": "repo"})
    provider, broker = _Provider(), GrantBroker(_Journal())
    used = broker.access("gh", provider, opened)
    assert used.secret.token.reveal() == b"CANARY-LASTING" and provider.calls == 0
    with pytest.raises(ActionError) as caught:
        broker.after_unauthorized("gh", provider, opened, used)
    assert caught.value.failure == "oauth_grant_dead" and provider.calls == 0


def test_lock_wipes_every_access_token(vault: OpenVault) -> None:
    provider = _Provider()
    broker = GrantBroker(_Journal())
    handed = broker.access("tracker", provider, vault)
    held = broker._grants["tracker"].token
    assert held is not None and len(held) > 0
    broker.forget()
    assert len(held) == 0 and broker._grants["tracker"].token is None
    assert handed.secret.token.reveal() == b"CANARY-ACCESS-1"  # the executor's copy is its own
    assert broker.access("tracker", provider, vault).secret.token.reveal() == b"CANARY-ACCESS-2"


def test_no_token_reaches_a_journal_record_or_a_repr(vault: OpenVault) -> None:
    provider, journal = _Provider(), _Journal()
    broker = GrantBroker(journal)
    access = broker.access("tracker", provider, vault)
    provider.refuse = _refused("invalid_grant")
    with pytest.raises(ActionError) as caught:
        broker.after_unauthorized("tracker", provider, vault, access)
    text = json.dumps(journal.records) + repr(access) + repr(broker.dead()) + str(caught.value)
    assert "CANARY" not in text
    assert journal.records[0][1] == {
        "grant": "tracker",
        "issuer": "https://idp.example",
        "scopes": ["read", "write"],
        "rotated": True,
        "expires_in": 3600,
    }


def test_a_token_of_another_client_is_not_used(vault: OpenVault) -> None:
    old, new = _Provider(), _Provider()
    broker = GrantBroker(_Journal())
    broker.access("tracker", old, vault)
    # The accepted policy now names another provider for the grant: its client is new.
    fresh = broker.access("tracker", new, vault)
    assert (old.calls, new.calls) == (1, 1)
    assert fresh.secret.token.reveal() == b"CANARY-ACCESS-1" and fresh.generation == 2
