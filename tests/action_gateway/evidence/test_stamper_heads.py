"""The stamper asks for a journal's note only when its head moved, against a real TSA and
real journals: a quiet gateway's checkpoints (every few minutes, for weeks) add no stamp, a
restart re-stamps nothing, and "stale" means a head that has waited too long for its stamp,
not a quiet spell."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.real_tsa import TsaServer
from safeport.action_gateway.evidence.stamper import CheckpointStamper
from safeport.gateway_client.timestamp_findings import timestamp_findings
from safeport.shared.audit import JournalWriter
from safeport.shared.schemas.config import TimestampSettings, TsaSettings
from safeport.vault.signed_note import sign_note
from safeport.vault.timestamp_check import STAMPS_FILE, load_stamps

KEY = Ed25519PrivateKey.generate()
NAMES = ("actions", "sessions")


def _settings(tsa: TsaServer, *urls: str) -> TimestampSettings:
    entries = [TsaSettings(url=url, ca_file=str(tsa.honest.ca_file)) for url in urls]
    return TimestampSettings(tsa=entries, timeout_s=2, stale_after_minutes=30)


class _Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def _stamper(
    folder: Path, settings: TimestampSettings, clock: Callable[[], datetime] | None = None
) -> CheckpointStamper:
    journal = lambda kind, body: None  # noqa: E731
    if clock is None:
        return CheckpointStamper(folder, 0o600, lambda: settings, journal)
    return CheckpointStamper(folder, 0o600, lambda: settings, journal, clock)


def _checkpoint(writers: dict[str, JournalWriter]) -> list[str]:
    """What CheckpointKeeper.sign hands over: every journal's note, moved or not."""
    return [sign_note(name, writer.head, KEY) for name, writer in writers.items()]


def _stamps(folder: Path) -> list[tuple[str, str, int]]:
    path = folder / STAMPS_FILE
    stamps, _ = load_stamps(path.read_bytes() if path.exists() else b"")
    # A note's first lines: "safeport/<journal>/<key id>", then the journal's size.
    return [(s.tsa, *_head(s.note)) for s in stamps]


def _head(note: str) -> tuple[str, int]:
    origin, size = note.split("\n")[:2]
    return origin.split("/")[1], int(size)


def _round(stamper: CheckpointStamper, notes: list[str]) -> None:
    """Hand ``notes`` over and let the stamper finish with them (close: one last round)."""
    stamper.submit(notes)
    stamper.close(wait_s=30)


def _writers(folder: Path) -> dict[str, JournalWriter]:
    writers = {name: JournalWriter(folder / f"{name}.jsonl") for name in NAMES}
    for writer in writers.values():
        writer.append("test.event", {"n": 0})
    return writers


def test_checkpoints_of_quiet_journals_add_no_stamp_and_a_record_adds_one_per_authority(
    tsa: TsaServer, tmp_path: Path
) -> None:
    urls = (tsa.url(), tsa.url("/tsr?second"))
    writers = _writers(tmp_path)
    try:
        stamper = _stamper(tmp_path, _settings(tsa, *urls))
        stamper.submit(_checkpoint(writers))
        for _ in range(50):  # four hours of a quiet gateway's checkpoints
            stamper.submit(_checkpoint(writers))
        stamper.close(wait_s=30)
        first = _stamps(tmp_path)
        assert sorted(first) == sorted((u, n, 1) for u in urls for n in NAMES)

        # One record in one journal, then checkpoints again: that journal's new head only.
        writers["actions"].append("test.event", {"n": 1})
        stamper = _stamper(tmp_path, _settings(tsa, *urls))
        for _ in range(20):
            stamper.submit(_checkpoint(writers))
        stamper.close(wait_s=30)
    finally:
        for writer in writers.values():
            writer.close()
    assert _stamps(tmp_path)[len(first) :] in (
        [(urls[0], "actions", 2), (urls[1], "actions", 2)],
        [(urls[1], "actions", 2), (urls[0], "actions", 2)],
    )


def test_a_restarted_stamper_stamps_nothing_again_and_knows_its_last_stamp(
    tsa: TsaServer, tmp_path: Path
) -> None:
    writers = _writers(tmp_path)
    try:
        before = datetime.now(UTC) - timedelta(seconds=5)
        _round(_stamper(tmp_path, _settings(tsa, tsa.url())), _checkpoint(writers))
        assert len(_stamps(tmp_path)) == len(NAMES)
        requests = tsa.requests["/tsr"]

        restarted = _stamper(tmp_path, _settings(tsa, tsa.url()))
        state = restarted.state()  # before any checkpoint: the stamps of the last run count
        assert state is not None and state.last_stamped_at is not None
        assert datetime.fromisoformat(state.last_stamped_at) >= before
        assert not state.stale and state.faults == []
        _round(restarted, _checkpoint(writers))
    finally:
        for writer in writers.values():
            writer.close()
    assert len(_stamps(tmp_path)) == len(NAMES) and tsa.requests["/tsr"] == requests
    assert restarted._thread is None  # nothing was waiting: no authority was asked


def test_a_quiet_gateway_whose_heads_are_all_stamped_is_not_stale(
    tsa: TsaServer, tmp_path: Path
) -> None:
    clock = _Clock()
    writers = _writers(tmp_path)
    try:
        stamper = _stamper(tmp_path, _settings(tsa, tsa.url()), clock)
        _round(stamper, _checkpoint(writers))
        clock.now += timedelta(hours=6)  # no record since: checkpoints, but nothing to stamp
        stamper.submit(_checkpoint(writers))
        state = stamper.state()
    finally:
        for writer in writers.values():
            writer.close()
    assert state is not None and not state.stale and state.last_stamped_at is not None
    assert [f.state for f in timestamp_findings(state.model_dump())] == ["ok"]


def test_a_head_waiting_on_a_failing_authority_longer_than_the_bound_is_stale(
    tsa: TsaServer, tmp_path: Path
) -> None:
    clock = _Clock()
    writers = _writers(tmp_path)
    stamper = _stamper(tmp_path, _settings(tsa, tsa.url(), tsa.down_url), clock)
    try:
        stamper.submit(_checkpoint(writers))
        clock.now += timedelta(minutes=29)
        stamper.submit(_checkpoint(writers))  # the same heads: they wait since the first
        assert not stamper.state().stale  # type: ignore[union-attr]
        clock.now += timedelta(minutes=2)
        state = stamper.state()
    finally:
        stamper.close(wait_s=30)
        for writer in writers.values():
            writer.close()
    assert state is not None and state.stale
    details = [f.detail for f in timestamp_findings(state.model_dump()) if f.state == "fail"]
    assert any("waited for its stamp longer than 30 minutes" in d for d in details), details
    # The working authority stamped both heads; the down one has them waiting.
    assert sorted(_stamps(tmp_path)) == sorted((tsa.url(), n, 1) for n in NAMES)
