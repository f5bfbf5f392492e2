"""Checkpoint heads leave the machine: a real rsyslogd receives them over UDP, TCP and a local
Unix socket and parses them as RFC 5424; a dead target never holds anything up."""

from __future__ import annotations

import re
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.fakes import FakeVaultStore, Recorder
from harness.gateway import PASSPHRASE, POLICY, Gateway, ssh
from safeport.action_gateway.evidence.syslog import SyslogTarget, format_heads
from safeport.errors import ConfigError
from safeport.shared.audit import JournalHead
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.vault.checkpoints import load_checkpoints, verify_checkpoint
from safeport.vault.interface import Checkpoint
from tests.action_gateway.real_rsyslog import RSYSLOGD, Rsyslog, free_port, running_rsyslog
from tests.conftest import need

# RFC 5424 §6: PRI VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
RFC5424 = re.compile(
    rb"<(?P<pri>[0-9]{1,3})>1 (?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{1,6}Z) "
    rb"(?P<host>[!-~]{1,255}) (?P<app>[!-~]{1,48}) (?P<pid>[!-~]{1,128}) (?P<msgid>[!-~]{1,32}) "
    rb"(?P<sd>(?:\[[^\]]*\])+|-)(?: (?P<msg>.*))?"
)
ELEMENT = re.compile(r'\[head@32473((?: [a-z_]+="[^"]*")+)\]')
PARAM = re.compile(r' ([a-z_]+)="([^"]*)"')


def with_syslog(target: str) -> str:
    return POLICY.replace("[gateway]\n", f'[gateway]\nsyslog = "{target}"\n', 1)


def heads_in(structured_data: str) -> dict[str, dict[str, str]]:
    heads = {}
    for element in ELEMENT.finditer(structured_data):
        params = dict(PARAM.findall(element.group(1)))
        heads[params["journal"]] = params
    return heads


def signed_heads(reply: dict[str, object]) -> dict[str, tuple[int, str]]:
    result = reply["result"]
    assert isinstance(result, dict)
    return {cp["journal"]: (cp["seq"], cp["hash"]) for cp in result["checkpoints"]}


def test_checkpoint_heads_arrive_at_a_real_rsyslogd_as_rfc5424_over_udp_tcp_and_a_local_socket(
    gateway_home: Path, tmp_path: Path
) -> None:
    need(RSYSLOGD is not None, "rsyslogd (Debian package rsyslog) is not installed")
    received: list[tuple[str, dict[str, dict[str, str]]]] = []
    with running_rsyslog(tmp_path / "rsyslog") as rsyslog:
        gw = Gateway(gateway_home)
        gw.write_policy(with_syslog("off"))
        gw.start("--syslog-socket", str(rsyslog.unix_socket))
        try:
            gw.unlock()
            gw.accept_policy()
            for target in (
                f"udp://127.0.0.1:{rsyslog.udp_port}",
                f"tcp://127.0.0.1:{rsyslog.tcp_port}",
                "local",
            ):
                gw.write_policy(with_syslog(target))
                before = len(rsyslog.parsed())
                gw.accept_policy()  # a save: signed (and sent to the new target) at once
                # Nothing moved since: the request shows those heads, signs nothing new.
                heads = signed_heads(gw.control("audit.checkpoint"))
                line = _wait_for_heads(rsyslog, heads, after=before)
                received.append((line, heads_in(line.split("|", 4)[4])))
            gateway_pid = gw.proc.pid if gw.proc else 0
        finally:
            assert gw.stop() == 0
        raw = rsyslog.raw()

    keys = FakeVaultStore(PASSPHRASE.encode(), Recorder(None)).public_keys()
    for line, found in received:
        version, app, procid, msgid, _ = line.split("|", 4)
        # rsyslog's own RFC 5424 parser split the message into these fields.
        assert (version, app, procid, msgid) == ("1", "safeport", str(gateway_pid), "checkpoint")
        assert set(found) == {"sessions", "actions"}
        # The collector's copy is evidence on its own: the signature checks with the vault key.
        for head in found.values():
            verify_checkpoint(_checkpoint_from(head), keys)
    # The first accept and one for each of the three targets; the checkpoint requests signed
    # nothing new, so they add no message.
    assert len(raw) >= 4
    for message in raw:
        match = RFC5424.fullmatch(message.encode())
        assert match is not None, message
        assert match["pri"] == b"37" and match["msg"].startswith(b"journal heads signed")


def _wait_for_heads(rsyslog: Rsyslog, heads: dict[str, tuple[int, str]], after: int) -> str:
    """The line rsyslogd wrote for exactly these signed heads (it writes asynchronously)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in rsyslog.parsed()[after:]:
            fields = line.split("|", 4)
            found = heads_in(fields[4]) if len(fields) == 5 else {}
            if {name: (int(h["seq"]), h["hash"]) for name, h in found.items()} == heads:
                return line
        time.sleep(0.05)
    raise AssertionError(f"rsyslogd never wrote {heads}: {rsyslog.parsed()}")


def _checkpoint_from(params: dict[str, str]) -> Checkpoint:
    document = (
        '{"format":"safeport-checkpoint","version":1,"checkpoints":[{'
        f'"journal":"{params["journal"]}","seq":{params["seq"]},"hash":"{params["hash"]}",'
        f'"signed_at":"{params["signed_at"]}","signer":"{params["signer"]}",'
        f'"signature":"{params["signature"]}"'
        "}]}"
    )
    return load_checkpoints(document.encode(), source="syslog")[0]


def test_a_dead_syslog_target_never_blocks_a_checkpoint_or_an_action_and_is_logged_once(
    gateway_home: Path,
) -> None:
    closed = free_port()  # nothing listens there: every connection is refused
    gw = Gateway(gateway_home)
    gw.write_policy(with_syslog(f"tcp://127.0.0.1:{closed}"))
    gw.start()
    try:
        gw.unlock()
        gw.accept_policy()
        started = time.monotonic()
        for _ in range(3):
            assert gw.control("audit.checkpoint")["ok"]
        assert time.monotonic() - started < 20  # not held by the target (generous for CI)
        agent = gw.agent()
        assert agent.call(ssh("r1", command="no_such_command"))["error"]["code"] == "denied"
        agent.close()
        # The sender thread reports its first failure when it gets to it; stopping then
        # sends the rest of the queue, and the heads signed at stop, before it exits.
        deadline = time.monotonic() + 60
        while "could not send checkpoint heads" not in gw.stderr_path.read_text():
            assert time.monotonic() < deadline, "the sender never tried the target"
            time.sleep(0.05)
    finally:
        assert gw.stop() == 0
    stderr = gw.stderr_path.read_text()
    assert stderr.count("could not send checkpoint heads to syslog") == 1, stderr
    assert f"tcp://127.0.0.1:{closed}" in stderr


def test_syslog_off_sends_nothing_and_local_is_the_default(gateway_home: Path) -> None:
    path = gateway_home / "log.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    listener.settimeout(0.5)
    gw = Gateway(gateway_home)
    gw.write_policy(with_syslog("off"))
    gw.start("--syslog-socket", str(path))
    try:
        gw.unlock()
        gw.accept_policy()
        assert gw.control("audit.checkpoint")["ok"]
        with pytest.raises(TimeoutError):
            listener.recv(65536)
        gw.write_policy()  # no syslog key: "local"
        gw.accept_policy()
        assert gw.control("audit.checkpoint")["ok"]
        message = listener.recv(65536)
    finally:
        assert gw.stop() == 0
        listener.close()
    match = RFC5424.fullmatch(message)
    assert match is not None and set(heads_in(match["sd"].decode())) == {"sessions", "actions"}


# -- pure parts ----------------------------------------------------------------------------------


def _checkpoint(journal: str, seq: int) -> Checkpoint:
    return Checkpoint(
        journal=journal,
        head=JournalHead(seq=seq, hash="ab" * 32),
        signed_at=datetime(2026, 12, 1, 18, 0, tzinfo=UTC),
        signature=b"\x01" * 64,
        signer_fingerprint="SHA256:" + "A" * 43,
    )


def test_a_message_is_one_rfc5424_line_with_one_element_per_journal() -> None:
    message = format_heads(
        [_checkpoint("sessions", 7), _checkpoint("actions", 0)],
        hostname="build host\n]x",
        pid=4242,
        now=datetime(2026, 12, 1, 18, 0, 1, 5, tzinfo=UTC),
    )
    match = RFC5424.fullmatch(message)
    assert match is not None, message
    assert match["ts"] == b"2026-12-01T18:00:01.000005Z"
    assert match["host"] == b"buildhost]x"  # no space, no control character in a header field
    assert (match["app"], match["pid"], match["msgid"]) == (b"safeport", b"4242", b"checkpoint")
    heads = heads_in(match["sd"].decode())
    assert {name: head["seq"] for name, head in heads.items()} == {"sessions": "7", "actions": "0"}
    assert b"\n" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local", SyslogTarget("local")),
        ("off", SyslogTarget("off")),
        ("udp://127.0.0.1:5514", SyslogTarget("udp", "127.0.0.1", 5514)),
        ("tcp://logs.example.com:6514", SyslogTarget("tcp", "logs.example.com", 6514)),
        ("tcp://[::1]:514", SyslogTarget("tcp", "::1", 514)),
    ],
)
def test_a_syslog_setting_names_its_target(text: str, expected: SyslogTarget) -> None:
    policy, _ = parse_gateway_policy(f'[gateway]\nsyslog = "{text}"\n')
    assert SyslogTarget.parse(policy.gateway.syslog) == expected


@pytest.mark.parametrize(
    "text",
    ["udp://", "http://127.0.0.1:80", "udp://127.0.0.1:0", "tcp://127.0.0.1:70000",
     "tcp://127.0.0.1", "udp://a b:1", "LOCAL", "tcp://127.0.0.1:514/x"],
)  # fmt: skip
def test_a_malformed_syslog_setting_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="syslog"):
        parse_gateway_policy(f'[gateway]\nsyslog = "{text}"\n')


def test_an_unknown_gateway_key_is_still_an_error() -> None:
    with pytest.raises(ConfigError, match="syslog_target"):
        parse_gateway_policy('[gateway]\nsyslog_target = "local"\n')
    assert parse_gateway_policy("[gateway]\n")[0].gateway.syslog == "local"
