"""`sp policy accept` shows the change a human approves as a real diff, line by line."""

from __future__ import annotations

from pathlib import Path

from safeport.action_gateway.policy_store import policy_diff_lines
from safeport.cli.render import diff_text
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp

__all__ = ["home"]


def test_the_diff_keeps_one_line_per_line_and_escapes_only_inside_lines() -> None:
    lines = policy_diff_lines("a = 1\nb = 2\n", 'a = 1\nb = "x\x1b[2Jy\u202e"\n')
    text = diff_text(lines, colour=False)
    assert text.splitlines()[:3] == ["--- accepted", "+++ gateway.toml", "@@ -1,2 +1,2 @@"]
    assert " a = 1" in text.splitlines()
    assert "-b = 2" in text.splitlines()
    assert '+b = "x\\u001b[2Jy\\u202e"' in text.splitlines()
    assert "\\u000a" not in text and "\x1b" not in text and "\u202e" not in text


def test_colour_marks_added_and_removed_lines_on_a_terminal() -> None:
    text = diff_text(policy_diff_lines("a = 1\n", "a = 2\n"), colour=True)
    assert "\x1b[31m-a = 1" in text and "\x1b[32m+a = 2" in text
    assert "\x1b" not in diff_text(policy_diff_lines("a = 1\n", "a = 2\n"), colour=False)


def test_identical_texts_say_no_changes() -> None:
    assert diff_text(policy_diff_lines("a = 1\n", "a = 1\n"), colour=False) == "no changes"


def test_accept_against_the_real_gateway_shows_lines_then_no_changes(home: Path) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        first = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert first.returncode == 0, first.stderr
        out = first.stdout.splitlines()
        assert "no policy is accepted yet: every line below is new" in out
        assert "+[ssh.hosts.nowhere]" in out and "+++ gateway.toml" in out
        assert "\\u000a" not in first.stdout
        policy = home / "gateway.toml"
        policy.write_text(
            policy.read_text().replace("connect_timeout_s = 2", "connect_timeout_s = 3")
        )
        second = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert second.returncode == 0, second.stderr
        lines = second.stdout.splitlines()
        assert "-connect_timeout_s = 2" in lines and "+connect_timeout_s = 3" in lines
        assert "+[ssh.hosts.nowhere]" not in lines
        third = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert third.returncode == 0 and third.stdout.startswith("no changes")
