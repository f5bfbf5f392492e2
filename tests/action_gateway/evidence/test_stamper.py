"""The background stamper against a real TSA (`openssl ts -reply` behind loopback HTTP).

A checkpoint handed over is stamped without the caller waiting; each way an authority fails
(down, 10 s slow, garbage, a stamp of another digest, a stamp from another CA) keeps no stamp,
is journaled, retried with back-off, and shows in what `sp doctor` reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.real_tsa import TsaServer
from safeport.action_gateway.evidence import stamper as stamper_module
from safeport.action_gateway.evidence.stamper import CheckpointStamper
from safeport.gateway_client.timestamp_findings import timestamp_findings
from safeport.shared.audit import JournalHead
from safeport.shared.schemas.config import TimestampSettings, TsaSettings
from safeport.vault.signed_note import sign_note
from safeport.vault.timestamp_check import STAMPS_FILE, check_stamp, load_stamps

KEY = Ed25519PrivateKey.generate()
NOTE = sign_note("actions", JournalHead(seq=7, hash="ef" * 32), KEY)


def _settings(tsa: TsaServer, url: str) -> TimestampSettings:
    entry = TsaSettings(url=url, ca_file=str(tsa.honest.ca_file))
    return TimestampSettings(tsa=[entry], timeout_s=1, stale_after_minutes=30)


def _until(condition: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the stamper did not get there in time"
        time.sleep(0.05)


def _stamper(
    tmp_path: Path, settings: TimestampSettings, journaled: list[tuple[str, dict[str, object]]]
) -> CheckpointStamper:
    return CheckpointStamper(
        tmp_path, 0o600, lambda: settings, lambda kind, body: journaled.append((kind, body))
    )


def _stamped(stamper: CheckpointStamper) -> bool:
    state = stamper.state()
    return state is not None and state.last_stamped_at is not None


def test_a_checkpoint_is_stamped_in_the_background_and_its_stamp_verifies(
    tsa: TsaServer, tmp_path: Path
) -> None:
    journaled: list[tuple[str, dict[str, object]]] = []
    stamper = _stamper(tmp_path, _settings(tsa, tsa.url()), journaled)
    try:
        stamper.submit([NOTE])
        _until(lambda: (tmp_path / STAMPS_FILE).exists() and _stamped(stamper))
    finally:
        stamper.close()
    (stamp,), malformed = load_stamps((tmp_path / STAMPS_FILE).read_bytes())
    root = x509.load_pem_x509_certificate(tsa.honest.ca_file.read_bytes())
    checked = check_stamp(stamp, [root], KEY.public_key().public_bytes_raw())
    assert malformed == 0 and checked.note.head.seq == 7 and stamp.tsa == tsa.url()
    state = stamper.state()
    assert state is not None and not state.stale and state.faults == [] and journaled == []
    assert [f.state for f in timestamp_findings(state.model_dump())] == ["ok"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("down", "unreachable"),
        ("/slow", "no answer within 1 s"),
        ("/garbage", "not an RFC 3161 response"),
        ("/other", "does not verify"),
        ("/wrong-ca", "does not verify"),
    ],
)
def test_a_failing_authority_delays_nothing_keeps_no_stamp_and_shows_in_doctor(
    tsa: TsaServer, tmp_path: Path, path: str, reason: str
) -> None:
    url = tsa.down_url if path == "down" else tsa.url(path)
    journaled: list[tuple[str, dict[str, object]]] = []
    stamper = _stamper(tmp_path, _settings(tsa, url), journaled)
    try:
        started = time.monotonic()
        stamper.submit([NOTE])  # what CheckpointKeeper.sign does after writing checkpoint.json
        handed_over = time.monotonic() - started
        _until(lambda: bool(stamper.state().faults))  # type: ignore[union-attr]
        state = stamper.state()
    finally:
        stamper.close(wait_s=0.5)
    # The hand-over never waits on the network: far below the 1 s timeout, let alone 10 s.
    assert handed_over < 0.9
    assert state is not None and reason in state.faults[0] and url in state.faults[0]
    assert not (tmp_path / STAMPS_FILE).exists()
    assert journaled and journaled[0][0] == "timestamp.failed"
    assert journaled[0][1]["tsa"] == url and reason in str(journaled[0][1]["reason"])
    findings = list(timestamp_findings(state.model_dump()))
    assert [f.state for f in findings] == ["fail"] and reason in findings[0].detail


def test_a_fault_is_retried_with_back_off_and_journaled_once_per_reason(
    tsa: TsaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stamper_module, "FIRST_RETRY_S", 0.2)
    journaled: list[tuple[str, dict[str, object]]] = []
    stamper = _stamper(tmp_path, _settings(tsa, tsa.url("/garbage")), journaled)
    before = tsa.requests["/garbage"]
    try:
        stamper.submit([NOTE])
        _until(lambda: tsa.requests["/garbage"] - before >= 3)
    finally:
        stamper.close()
    assert [kind for kind, _ in journaled] == ["timestamp.failed"]
    assert journaled[0][1]["retry_s"] == 0.2


def test_no_authority_configured_means_no_thread_and_nothing_shown(tmp_path: Path) -> None:
    stamper = CheckpointStamper(tmp_path, 0o600, lambda: None, lambda kind, body: None)
    stamper.submit([NOTE])
    assert stamper.state() is None and stamper._thread is None
    assert list(timestamp_findings(None)) == []
