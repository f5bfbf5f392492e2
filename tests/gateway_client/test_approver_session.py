"""The approver session against a real `sp gateway run`: cards pushed while a reply is awaited
are handed over once, answers reach the requester, and a restart is followed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import AgentProcess, clean_env, wait_until
from safeport.gateway_client.approver_session import (
    ApproverEvent,
    ApproverSession,
    CardArrived,
    CardClosed,
    attend_gateway,
)
from safeport.gateway_client.control_socket import GatewayClient, GatewayNotRunning
from safeport.shared.paths import SafeportPaths, layout, locate
from safeport.shared.schemas import operations as ops
from safeport.vault.secrets import SecretBytes
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import PASSPHRASE, home, sp

__all__ = ["home"]  # the fixture: a real vault holding an ssh key, and gateway.toml

PROPOSAL = {"v": 1, "type": "propose", "action": "ssh_exec", "host_id": "nowhere",
            "command_id": "uptime", "args": {}}  # fmt: skip


@pytest.fixture
def serving(home: Path) -> Iterator[SafeportPaths]:
    with running_gateway(home):
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        yield locate(env=clean_env(home))


def _cards_waiting(paths: SafeportPaths) -> int:
    with GatewayClient(paths, timeout=10) as client:
        return len(client.call(ops.APPROVALS_LIST).cards)


def _until_closed(session: ApproverSession, seen: list[ApproverEvent]) -> CardClosed:
    deadline = time.monotonic() + 15
    while True:
        closed = [event for event in seen if isinstance(event, CardClosed)]
        if closed:
            return closed[0]
        assert time.monotonic() < deadline, seen
        session.connection.settimeout(max(deadline - time.monotonic(), 0.1))
        event = session.receive()
        if event is not None:
            seen.append(event)


def test_a_card_pushed_while_a_reply_was_awaited_is_handed_over_once_and_answered(
    serving: SafeportPaths, home: Path
) -> None:
    secret = SecretBytes(PASSPHRASE.encode())
    # Under a client of its own (flock), so this test process is not the requester's client.
    agent = AgentProcess(home, ["flock", "-s", str(home / "client.lock")])
    with GatewayClient(serving, timeout=10) as client:
        session = ApproverSession(client)
        assert session.register(secret) == []
        agent.send({**PROPOSAL, "id": "p1"})
        wait_until(lambda: _cards_waiting(serving) == 1, timeout=15)
        assert session.sessions() == []  # the card was pushed before this reply
        pending = session.pending()
        assert [type(event) for event in pending] == [CardArrived]
        card = pending[0]
        assert isinstance(card, CardArrived) and card.card["action"] == "ssh_exec"
        assert session.pending() == []  # handed over once
        session.decide(str(card.card["id"]), False)
        closed = _until_closed(session, session.pending())
        assert closed.card_id == card.card["id"] and closed.outcome == "denied"
    assert agent.next(10)["error"]["code"] == "denied"
    assert secret.reveal() == PASSPHRASE.encode()  # the caller's copy is left to the caller
    agent.exit()


def test_a_gateway_that_is_not_running_at_the_start_is_said_at_once(tmp_path: Path) -> None:
    paths = layout({"SAFEPORT_HOME": str(tmp_path)})
    with pytest.raises(GatewayNotRunning):
        attend_gateway(
            paths,
            SecretBytes(b"x"),
            lambda *_: pytest.fail("nothing to serve"),
            lost=lambda: pytest.fail("nothing was lost"),
        )


def test_a_restart_is_reported_once_and_the_session_registers_again(home: Path) -> None:
    secret = SecretBytes(PASSPHRASE.encode())
    paths = locate(env=clean_env(home))
    served: list[bool] = []
    events: list[str] = []
    gateways: list[object] = []

    def serve(session: ApproverSession, waiting: list[CardArrived], again: bool) -> None:
        served.append(again)
        if again:
            return  # registered again after the restart: enough
        assert sp(home, "gateway", "stop").returncode == 0
        session.connection.settimeout(20)
        while True:  # until the stop closes the connection (GatewayClosed ends the serve)
            session.receive()

    def sleep(seconds: float) -> None:
        if len(gateways) == 1:
            events.append("restart")
            started = running_gateway(home)
            started.__enter__()
            gateways.append(started)
        time.sleep(seconds)

    first = running_gateway(home)
    first.__enter__()
    gateways.append(first)
    try:
        attend_gateway(
            paths,
            secret,
            serve,
            lost=lambda: events.append("lost"),
            keep_going=lambda: len(served) < 2,
            sleep=sleep,
            retry_s=0.2,
            timeout=10,
        )
    finally:
        for started in reversed(gateways):
            started.__exit__(None, None, None)  # type: ignore[attr-defined]
    assert served == [False, True]
    assert events == ["lost", "restart"]
