"""`sp status` names each OAuth grant its provider refused, and the command that reconnects it."""

from __future__ import annotations

from safeport.cli.health.status_text import dead_grant_lines


def test_each_dead_grant_has_a_line_naming_sp_oauth_connect() -> None:
    dead = [
        {"name": "tracker", "issuer": "https://idp.example", "since": "2026-12-07T05:00:00+00:00",
         "reason": "its provider refused the refresh token"},
    ]  # fmt: skip
    (line,) = dead_grant_lines(dead)
    assert line.startswith("GRANT tracker is dead (its provider refused the refresh token")
    assert line.endswith("reconnect it with `sp oauth connect tracker`")
    assert dead_grant_lines([]) == []
