"""Connect flows against a caller who keeps a flow alive or spends it in pieces, through an
in-process GatewayCore and the provider stand-in of ``test_grant_desk.py``: a device code is
polled no longer than the provider said it lives, however often the provider answers pending."""

from __future__ import annotations

import pytest

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.oauth.protocol import DeviceAuthorization, DevicePending
from safeport.errors import Error
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.core.test_grant_desk import ISSUER, UID, Clock, Provider
from tests.action_gateway.core.test_grant_desk import core as core  # a fixture
from tests.action_gateway.core.test_grant_desk import provider as provider  # a fixture


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
