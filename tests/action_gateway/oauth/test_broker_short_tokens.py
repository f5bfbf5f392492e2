"""A provider whose access tokens live a minute or less (or one that says so to make the gateway
spin): a token just refreshed is used, not refreshed again by every action that waited for it,
so twenty actions still spend the rotating refresh token once; it is refreshed again only when
half its life is over."""

from __future__ import annotations

import pytest

from safeport.action_gateway.oauth.broker import GrantBroker
from safeport.vault import OpenVault
from tests.action_gateway.oauth.test_broker import _at_once, _Clock, _Journal, _Provider
from tests.action_gateway.oauth.test_broker import vault as vault  # a fixture


@pytest.mark.parametrize("lifetime", [1, 2, 30, 60, 61])
def test_twenty_actions_on_a_short_lived_token_cause_one_refresh(
    vault: OpenVault, lifetime: int
) -> None:
    provider, clock = _Provider(expires_in=lifetime), _Clock()
    broker = GrantBroker(_Journal(), clock=clock)
    results = _at_once(20, lambda: broker.access("tracker", provider, vault))
    assert provider.calls == 1
    assert not any(isinstance(result, Exception) for result in results)
    broker.access("tracker", provider, vault)  # the next action, at once: the same token
    assert provider.calls == 1


@pytest.mark.parametrize("lifetime", [2, 30, 120, 3600])
def test_a_token_is_refreshed_before_it_expires_however_short_it_lives(
    vault: OpenVault, lifetime: int
) -> None:
    provider, clock = _Provider(expires_in=lifetime), _Clock()
    broker = GrantBroker(_Journal(), clock=clock)
    broker.access("tracker", provider, vault)
    clock.now += lifetime - min(60, lifetime / 2) - 0.01  # still fresh
    broker.access("tracker", provider, vault)
    assert provider.calls == 1
    clock.now += 0.02  # half its life (or a minute) before its expiry: refreshed
    broker.access("tracker", provider, vault)
    assert provider.calls == 2
