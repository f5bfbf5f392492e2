"""Connect flows against a caller who keeps a flow alive or spends it in pieces, through an
in-process GatewayCore and the provider stand-in of ``test_grant_desk.py``: a device code is
polled no longer than the provider said it lives, however often the provider answers pending;
a grant is never revoked at another issuer than the one it was connected at."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.action_gateway.oauth.protocol import DeviceAuthorization, DevicePending, TokenGrant
from safeport.errors import Error
from safeport.shared.audit import read_records
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.vault.errors import VaultLocked
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import OAuthSecret, SecretBytes, TokenSecret
from tests.action_gateway.core.test_grant_desk import (
    ISSUER,
    POLICY,
    UID,
    Clock,
    Provider,
    _begin_code,
)
from tests.action_gateway.core.test_grant_desk import core as core  # a fixture
from tests.action_gateway.core.test_grant_desk import provider as provider  # a fixture
from tests.action_gateway.in_process_core import in_process_core
from tests.vault.vault_factory import passphrase


class ShortLivedDevice(Provider):
    """A device code that lives ``lives_s`` seconds, and a provider that answers pending."""

    lives_s = 7

    def device_start(self, client_secret: SecretBytes | None) -> DeviceAuthorization:
        return DeviceAuthorization(
            SecretBytes(b"CANARY-DEVICE-CODE"), "WDJB-MJHT", f"{ISSUER}/device", None, 1,
            self.lives_s,
        )  # fmt: skip


@pytest.mark.parametrize("slow_down", [False, True])
def test_a_device_code_is_not_polled_past_its_expiry_however_often_it_is_pending(
    core: GatewayCore, provider: Provider, slow_down: bool
) -> None:
    clock = Clock()
    core.grants._clock, core.grants._sleep = clock, clock.sleep
    provider.__class__ = ShortLivedDevice
    provider.device_answers = [DevicePending(slow_down) for _ in range(100)]
    begun = core.grants.begin("tracker", UID, redirect_uri=None, device=True, client_secret=None)
    assert begun.expires_in == ShortLivedDevice.lives_s
    waits = 0
    with pytest.raises(Error, match="device code expired"):
        while waits < 10:  # every wait answers pending, until the code's 7 s are over
            started = clock.now
            assert core.grants.device_wait(begun.flow_id, UID, 2).state == "pending"
            clock.now = max(clock.now, started + 2)  # the caller's time passes between waits
            waits += 1
    assert clock.now <= ShortLivedDevice.lives_s + 6  # at most one interval past it
    # The flow is gone with its code: no later wait polls it again.
    polls = provider.polls
    with pytest.raises(Error, match="no such connect flow"):
        core.grants.device_wait(begun.flow_id, UID, 2)
    assert provider.polls == polls


def test_a_device_code_that_lives_long_enough_still_connects(
    core: GatewayCore, provider: Provider
) -> None:
    clock = Clock()
    core.grants._clock, core.grants._sleep = clock, clock.sleep
    provider.__class__ = ShortLivedDevice
    provider.device_answers = [DevicePending(False)] * 5 + [provider.grant(None)]
    begun = core.grants.begin("tracker", UID, redirect_uri=None, device=True, client_secret=None)
    states = [core.grants.device_wait(begun.flow_id, UID, 2).state for _ in range(3)]
    assert states[-1] == "connected" and clock.now <= ShortLivedDevice.lives_s


class OtherIssuer(Provider):
    """The provider a changed policy names: another issuer than the grant was connected at."""

    issuer: str | None = "https://evil.example"

    def endpoints(self) -> Endpoints:
        return dataclasses.replace(super().endpoints(), issuer=self.issuer)


@pytest.mark.parametrize("issuer", ["https://evil.example", ISSUER + "/", None])
def test_removing_a_grant_never_sends_its_token_to_another_issuer(
    core: GatewayCore, provider: Provider, tmp_path: Path, issuer: str | None
) -> None:
    begun = core.grants.begin(
        "tracker", UID, redirect_uri="http://127.0.0.1:5555/callback", device=False,
        client_secret=SecretBytes(b"CANARY-CLIENT-SECRET"),
    )  # fmt: skip
    assert begun.authorization_url is not None
    state = begun.authorization_url.split("state=", 1)[1].split("&", 1)[0]
    core.grants.finish(begun.flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    other = OtherIssuer()
    other.issuer = issuer

    def clients(policy: GatewayPolicy, name: str) -> Provider:
        return other

    core._credentials.grant_clients = clients  # the accepted policy now names another provider
    problem = core.grants.revoke("tracker")
    assert problem is not None and "sp oauth connect tracker" in problem
    assert other.revoked == [] and provider.revoked == []
    records = read_records(tmp_path / "h" / "audit" / "actions.jsonl")
    assert records[-1]["kind"] == "oauth.revoke_failed" and "CANARY" not in json.dumps(records)


def test_a_wait_with_no_poll_in_it_still_lasts_its_time_so_sp_does_not_spin(
    core: GatewayCore, provider: Provider
) -> None:
    clock = Clock()
    core.grants._clock, core.grants._sleep = clock, clock.sleep
    # slow_down after slow_down: the interval (1 + 5 + 5 s) outgrows the 2 s waits.
    answers: list[TokenGrant | DevicePending] = [DevicePending(True), DevicePending(True)]
    provider.device_answers = answers + [DevicePending(False) for _ in range(20)]
    begun = core.grants.begin("tracker", UID, redirect_uri=None, device=True, client_secret=None)
    for _ in range(12):  # `sp` asks again as soon as it is answered
        started = clock.now
        assert core.grants.device_wait(begun.flow_id, UID, 2).state == "pending"
        assert clock.now >= started + 2
    assert provider.polls <= 1 + 12 * 2 // 6 + 1  # at the provider's pace, not the caller's


class SlowRefresh(Provider):
    """A refresh that waits at the provider until the test lets it answer (a rotated token)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_refresh = threading.Event()
        self.proceed = threading.Event()
        self.refreshed_with: list[bytes] = []

    def refresh(self, refresh_token: SecretBytes, client_secret: SecretBytes | None) -> TokenGrant:
        self.refreshed_with.append(refresh_token.reveal())
        self.in_refresh.set()
        assert self.proceed.wait(30)
        return super().refresh(refresh_token, client_secret)


@contextlib.contextmanager
def _core_of(tmp_path: Path, provider: Provider) -> Iterator[GatewayCore]:
    def clients(policy: GatewayPolicy, name: str) -> Provider:
        return provider

    gateway, paths = in_process_core(tmp_path, grant_clients=clients)
    paths.gateway_config.parent.mkdir(parents=True, exist_ok=True)
    paths.gateway_config.write_text(POLICY, encoding="utf-8")
    try:
        gateway.prove_passphrase(passphrase())
        gateway.accept_policy(parse_gateway_policy(POLICY)[1], None)
        yield gateway
    finally:
        gateway.lock("test over")
        gateway.close()


def _connect(gateway: GatewayCore) -> None:
    begun = gateway.grants.begin(
        "tracker", UID, redirect_uri="http://127.0.0.1:5555/callback", device=False,
        client_secret=None,
    )  # fmt: skip
    assert begun.authorization_url is not None
    state = begun.authorization_url.split("state=", 1)[1].split("&", 1)[0]
    gateway.grants.finish(begun.flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})


def _refresh_under_way(gateway: GatewayCore, provider: SlowRefresh) -> threading.Thread:
    """An action's refresh, stopped at the provider until ``provider.proceed`` is set."""
    gateway._credentials.grants.forget()  # the next action refreshes
    vault, _ = gateway._vault.current()
    action = threading.Thread(
        target=gateway._credentials.grants.access, args=("tracker", provider, vault)
    )
    action.start()
    assert provider.in_refresh.wait(30)
    return action


def _alongside(work: Callable[[], object], provider: SlowRefresh, action: threading.Thread) -> None:
    """Run ``work`` while the refresh is under way, then let the refresh answer."""
    other = threading.Thread(target=work)
    other.start()
    other.join(0.5)  # work that does not wait for the refresh reads or writes before it ends
    provider.proceed.set()
    action.join(30)
    other.join(30)
    assert not other.is_alive() and not action.is_alive()


def test_a_removal_during_a_refresh_revokes_the_token_the_refresh_rotated_to(
    tmp_path: Path,
) -> None:
    provider = SlowRefresh()
    with _core_of(tmp_path, provider) as gateway:
        _connect(gateway)  # the vault holds CANARY-REFRESH-1
        action = _refresh_under_way(gateway, provider)
        problems: list[str | None] = []
        _alongside(lambda: problems.append(gateway.grants.revoke("tracker")), provider, action)
        assert problems == [None]
        # The provider rotated CANARY-REFRESH-1 to CANARY-REFRESH-2: that one is revoked.
        assert provider.revoked == [("refresh_token", b"CANARY-REFRESH-2")]


def test_a_reconnect_during_a_refresh_is_not_undone_by_the_token_the_refresh_rotated_to(
    tmp_path: Path,
) -> None:
    provider = SlowRefresh()
    with _core_of(tmp_path, provider) as gateway:
        _connect(gateway)  # CANARY-REFRESH-1
        action = _refresh_under_way(gateway, provider)
        _alongside(lambda: _connect(gateway), provider, action)
        # The reconnect was given CANARY-REFRESH-2 while the old grant's refresh waited; that
        # refresh then rotated CANARY-REFRESH-1 to CANARY-REFRESH-3. The vault keeps the
        # reconnect's grant, its scopes, and the broker its access token.
        vault, _ = gateway._vault.current()
        stored = vault.secret("tracker")
        assert isinstance(stored, OAuthSecret) and stored.refresh_token is not None
        assert (stored.refresh_token.reveal(), stored.scopes) == (b"CANARY-REFRESH-2", ("read",))
        access = gateway._credentials.grants.access("tracker", provider, vault)
        assert access.secret.token.reveal() == b"CANARY-ACCESS-2"


HUMAN_VALUE: dict[str, SecretBytes | str] = {"scopes": "read", "issuer": ISSUER}


def _rotate_by_hand(gateway: GatewayCore) -> None:
    value = {**HUMAN_VALUE, "refresh_token": SecretBytes(b"CANARY-BY-HAND")}
    gateway.rotate_credential("tracker", value)


def test_a_grant_rotated_by_hand_is_used_from_the_next_action(tmp_path: Path) -> None:
    provider = SlowRefresh()
    provider.proceed.set()
    with _core_of(tmp_path, provider) as gateway:
        _connect(gateway)  # the broker holds CANARY-ACCESS-1 of the connect
        _rotate_by_hand(gateway)
        vault, _ = gateway._vault.current()
        access = gateway._credentials.grants.access("tracker", provider, vault)
        # Not the old grant's cached access token: one minted from the value given by hand.
        assert provider.refreshed_with == [b"CANARY-BY-HAND"]
        assert access.secret.token.reveal() == b"CANARY-ACCESS-2"


def test_a_rotation_by_hand_during_a_refresh_is_not_undone(tmp_path: Path) -> None:
    provider = SlowRefresh()
    with _core_of(tmp_path, provider) as gateway:
        _connect(gateway)  # CANARY-REFRESH-1
        action = _refresh_under_way(gateway, provider)
        _alongside(lambda: _rotate_by_hand(gateway), provider, action)
        vault, _ = gateway._vault.current()
        stored = vault.secret("tracker")
        assert isinstance(stored, OAuthSecret) and stored.refresh_token is not None
        assert stored.refresh_token.reveal() == b"CANARY-BY-HAND"


def test_a_token_credential_rotates_as_before(core: GatewayCore) -> None:
    core.add_credential("deploy-token", "token", {"token": SecretBytes(b"CANARY-T1")})
    core.rotate_credential("deploy-token", {"token": SecretBytes(b"CANARY-T2")})
    vault, _ = core._vault.current()
    secret = vault.secret("deploy-token")
    assert isinstance(secret, TokenSecret) and secret.token.reveal() == b"CANARY-T2"
    assert "deploy-token" not in core._credentials.grants._grants  # no grant state made for it


def test_an_action_that_opened_the_vault_before_a_lock_keeps_no_token_past_it(
    core: GatewayCore, provider: Provider
) -> None:
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    vault, _ = core._vault.current()  # an action opened the vault before the lock
    seen: list[object] = []

    def late_action(reason: str, locking: UnlockedVault) -> None:
        # Runs during the lock, after the grants' tokens were wiped and before the vault is
        # closed: the action asks for a token now.
        try:
            seen.append(core._credentials.grants.access("tracker", provider, vault))
        except Exception as exc:
            seen.append(exc)

    core._vault.on_lock(late_action)
    minted = provider.minted
    core.lock("test")
    assert len(seen) == 1 and isinstance(seen[0], VaultLocked)
    assert all(grant.token is None for grant in core._credentials.grants._grants.values())
    assert provider.minted == minted  # not even asked: the vault it came from is locking
    # Unlocked again, the grant serves as before.
    core.prove_passphrase(passphrase())
    reopened, _ = core._vault.current()
    assert core._credentials.grants.access("tracker", provider, reopened).secret.token
