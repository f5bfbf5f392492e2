"""Connect flows under way (`sp oauth connect`): one-shot, short-lived, few, and each usable
only by the user who began it.

A flow holds what its end needs -- the code flow's state and PKCE verifier, or the device code
-- and the client secret given at the start, all in memory only. It is named by a random id
given only to the `sp` that began it; finishing takes it out of the book, so a replayed callback
finds nothing. Past :data:`FLOW_TTL_S` or beyond :data:`MAX_FLOWS` the oldest go (wiped).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from safeport.action_gateway.oauth.broker import GrantClient
from safeport.action_gateway.oauth.client import CodeFlow
from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.action_gateway.oauth.errors import OAuthRefused
from safeport.action_gateway.oauth.protocol import DeviceAuthorization, DevicePending, TokenGrant
from safeport.vault.secrets import SecretBytes

FLOW_TTL_S = 600.0
MAX_FLOWS = 8


@runtime_checkable
class ConnectClient(GrantClient, Protocol):
    """The provider's side of connecting a grant (``oauth.client.OAuthClient`` is one)."""

    def endpoints(self) -> Endpoints: ...

    def begin_code(self, redirect_uri: str) -> CodeFlow: ...

    def exchange_code(
        self, flow: CodeFlow, query: Mapping[str, str], client_secret: SecretBytes | None
    ) -> TokenGrant: ...

    def device_start(self, client_secret: SecretBytes | None) -> DeviceAuthorization: ...

    def device_poll(
        self, device: DeviceAuthorization, client_secret: SecretBytes | None
    ) -> TokenGrant | DevicePending: ...


@dataclass(eq=False, repr=False)
class Flow:
    name: str
    uid: int
    scopes: tuple[str, ...]
    client: ConnectClient
    client_secret: SecretBytes | None
    code: CodeFlow | None = None
    device: DeviceAuthorization | None = None
    next_poll: float = 0.0
    interval: float = 5.0
    device_expires: float = 0.0  # when the device code expires (the poller's clock)
    started: float = 0.0  # set by the book (its clock)
    waiting: threading.Lock = field(default_factory=threading.Lock)
    id: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def wipe(self) -> None:
        if self.client_secret is not None:
            self.client_secret.wipe()
        if self.code is not None:
            self.code.pkce.verifier.wipe()
        if self.device is not None:
            self.device.device_code.wipe()

    def __repr__(self) -> str:
        return f"Flow(name={self.name!r}, <redacted>)"


class FlowBook:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._flows: dict[str, Flow] = {}

    def add(self, flow: Flow) -> Flow:
        with self._lock:
            self._expire()
            flow.started = self._clock()
            while len(self._flows) >= MAX_FLOWS:
                oldest = min(self._flows.values(), key=lambda f: f.started)
                self._flows.pop(oldest.id).wipe()
            self._flows[flow.id] = flow
        return flow

    def take(self, flow_id: str, uid: int) -> Flow:
        """The flow, out of the book (one-shot); the caller wipes it when done."""
        with self._lock:
            self._expire()
            flow = self._flows.get(flow_id)
            if flow is None or flow.uid != uid:
                raise _unknown()
            return self._flows.pop(flow_id)

    def get(self, flow_id: str, uid: int) -> Flow:
        """The flow, left in the book (a device flow waited on more than once)."""
        with self._lock:
            self._expire()
            flow = self._flows.get(flow_id)
            if flow is None or flow.uid != uid:
                raise _unknown()
            return flow

    def drop(self, flow: Flow) -> None:
        with self._lock:
            if self._flows.get(flow.id) is flow:
                del self._flows[flow.id]
        flow.wipe()

    def clear(self) -> None:
        with self._lock:
            flows, self._flows = list(self._flows.values()), {}
        for flow in flows:
            flow.wipe()

    def _expire(self) -> None:
        now = self._clock()
        for flow_id in [i for i, f in self._flows.items() if now - f.started > FLOW_TTL_S]:
            self._flows.pop(flow_id).wipe()


def _unknown() -> OAuthRefused:
    return OAuthRefused(
        "no such connect flow: it finished, expired (10 minutes) or was begun by someone else",
        hint="run `sp oauth connect` again",
    )
