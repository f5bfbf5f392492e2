"""The stamper's thread outlives whatever one authority's answer provokes: an exception of a
type nobody foresaw is that request's fault (journaled once, retried with back-off), never
the end of stamping; and if the thread ends anyway, `sp status` and `sp doctor` say so."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.real_tsa import TsaServer
from safeport.action_gateway.evidence import stamper as stamper_module
from safeport.action_gateway.evidence import tsa_client
from safeport.action_gateway.evidence.stamper import CheckpointStamper
from safeport.gateway_client.timestamp_findings import timestamp_findings
from safeport.shared.audit import JournalHead
from safeport.shared.schemas.config import TimestampSettings, TsaSettings
from safeport.vault import timestamp_check
from safeport.vault.signed_note import sign_note
from safeport.vault.timestamp_check import STAMPS_FILE

KEY = Ed25519PrivateKey.generate()
NOTES = [sign_note(name, JournalHead(seq=3, hash="ab" * 32), KEY) for name in ("a", "b")]


def _settings(tsa: TsaServer) -> TimestampSettings:
    entry = TsaSettings(url=tsa.url(), ca_file=str(tsa.honest.ca_file))
    return TimestampSettings(tsa=[entry], timeout_s=2, stale_after_minutes=30)


def _until(condition: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the stamper did not get there in time"
        time.sleep(0.05)


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("error", [RuntimeError, KeyError, AttributeError, RecursionError])
def test_an_unforeseen_error_from_an_answer_is_a_fault_retried_not_the_end_of_stamping(
    tsa: TsaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    monkeypatch.setattr(stamper_module, "FIRST_RETRY_S", 0.2)
    real = timestamp_check.check_response
    calls = {"n": 0}

    def breaks_thrice(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] <= 3:
            raise error("an answer the parser chokes on")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tsa_client, "check_response", breaks_thrice)
    journaled: list[tuple[str, dict[str, object]]] = []
    settings = _settings(tsa)
    stamper = CheckpointStamper(
        tmp_path, 0o600, lambda: settings, lambda kind, body: journaled.append((kind, body))
    )
    try:
        stamper.submit(NOTES)
        _until(lambda: bool(stamper.state().faults))  # type: ignore[union-attr]
        failing = stamper.state()
        _until(lambda: _lines(tmp_path / STAMPS_FILE) == 2, 30)
        _until(lambda: stamper.state().faults == [])  # type: ignore[union-attr]
        assert stamper._thread is not None and stamper._thread.is_alive()
    finally:
        stamper.close()
    assert failing is not None and error.__name__ in failing.faults[0]
    assert [kind for kind, _ in journaled] == ["timestamp.failed", "timestamp.recovered"]
    assert error.__name__ in str(journaled[0][1]["reason"])
    assert "chokes" not in str(journaled[0][1]["reason"])  # the type, never the answer's text


def test_a_stamping_thread_that_ends_anyway_shows_in_doctor(
    tsa: TsaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_client() -> object:
        raise RuntimeError("no HTTP client")

    monkeypatch.setattr(stamper_module, "new_client", no_client)
    settings = _settings(tsa)
    stamper = CheckpointStamper(tmp_path, 0o600, lambda: settings, lambda kind, body: None)
    stamper.submit(NOTES)
    thread = stamper._thread
    assert thread is not None
    thread.join(timeout=20)
    assert not thread.is_alive()
    state = stamper.state()
    assert state is not None and state.faults == ["stamping stopped: RuntimeError"]
    findings = list(timestamp_findings(state.model_dump()))
    assert [f.state for f in findings] == ["fail"] and "stamping stopped" in findings[0].detail
