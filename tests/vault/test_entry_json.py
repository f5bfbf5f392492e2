"""An entry's wire form is written and read in one place: control.sock's vault.entries reply
and `sp vault list --json` give it, the gateway-side backend reads it back unchanged."""

from __future__ import annotations

from datetime import UTC, datetime

from safeport.vault.interface import EntryInfo


def test_a_rotated_entry_comes_back_as_it_went() -> None:
    entry = EntryInfo(
        "deploy", "token", datetime(2026, 1, 2, tzinfo=UTC), datetime(2026, 3, 4, tzinfo=UTC)
    )
    wire = entry.as_json()
    assert wire == {
        "name": "deploy",
        "kind": "token",
        "created": "2026-01-02T00:00:00+00:00",
        "rotated": "2026-03-04T00:00:00+00:00",
    }
    assert EntryInfo.from_json(wire) == entry


def test_an_entry_never_rotated_has_no_rotation_date() -> None:
    entry = EntryInfo("key", "ssh-key", datetime(2026, 1, 2, tzinfo=UTC), None)
    assert entry.as_json()["rotated"] is None
    assert EntryInfo.from_json(entry.as_json()).rotated is None
