"""`sp policy accept` shows the change a human approves as a real diff, line by line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.gateway import clean_env
from safeport.action_gateway.policy.store import policy_diff_lines
from safeport.cli.render import diff_text
from safeport.shared.launch import sp_command
from tests.cli.running_gateway import running_gateway
from tests.cli.terminal import Terminal
from tests.cli.test_real_vault_e2e import POLICY, home, sp

__all__ = ["home"]

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy"


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


CALLERS = '\n[callers]\nrules = [{ exe = "/usr/bin/flock" }]\n'


def test_accept_shows_a_callers_table_folded_into_a_comment_as_removed_in_text_and_words(
    home: Path,
) -> None:
    policy = home / "gateway.toml"
    policy.write_text(POLICY + CALLERS)
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        folded = POLICY + '\n# callers\u2028[callers]\x85rules = [{ exe = "/usr/bin/flock" }]\n'
        policy.write_text(folded)
        checked = sp(home, "policy", "check", "--json")
        meaning = json.loads(checked.stdout)["unaccepted_meaning"]
        assert meaning[0]["weight"] == "loosened", meaning
        assert meaning[0]["text"].startswith("THE [callers] TABLE IS REMOVED: ANY process")
        plain = sp(home, "policy", "check").stdout
        assert "what it means, against the accepted policy:" in plain
        assert "LOOSENED   THE [callers] TABLE IS REMOVED" in plain
        # Refused at the prompt: the human saw the removal in both views before answering.
        shown = _refused_at_a_terminal(home)
        assert "not accepted" in shown, shown
        lines = shown.splitlines()
        assert "-[callers]" in lines and '-rules = [{ exe = "/usr/bin/flock" }]' in lines
        assert '+# callers\\u2028[callers]\\u0085rules = [{ exe = "/usr/bin/flock" }]' in lines
        said = lines.index("what it means, against the accepted policy:")
        assert lines[said + 1].startswith("  LOOSENED   THE [callers] TABLE IS REMOVED")
        assert shown.index("TABLE IS REMOVED") < shown.index("serve this policy?")
        served = json.loads(sp(home, "policy", "check", "--json").stdout)
        assert served["served"] is False


def test_accept_of_comments_and_unicode_in_strings_says_only_what_changed(home: Path) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        policy = home / "gateway.toml"
        policy.write_text(
            POLICY.replace(
                'argv = ["uptime"]',
                '# charge de l\'hôte — «uptime»\nargv = ["uptime"]\n'
                'description = "la charge\u2028(é)"',
            )
        )
        done = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert "+# charge de l'hôte — «uptime»" in lines
        assert '+description = "la charge\\u2028(é)"' in lines
        assert lines[lines.index("what it means, against the accepted policy:") + 1] == (
            '  CHANGED    command "uptime" on ssh host "nowhere" `description` changes from "" '
            'to "la charge\\u2028(\\u00e9)"'
        )
        again = sp(home, "policy", "check", "--json")
        assert json.loads(again.stdout)["served"] is True


def test_check_and_accept_say_a_widened_argv_as_loosened_and_count_it_last(home: Path) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        policy = home / "gateway.toml"
        policy.write_text(POLICY.replace('argv = ["uptime"]', 'argv = ["sh", "-c", "uptime"]'))
        meaning = json.loads(sp(home, "policy", "check", "--json").stdout)["unaccepted_meaning"]
        assert meaning == [
            {
                "weight": "loosened",
                "text": 'command "uptime" on ssh host "nowhere" `argv` changes from ["uptime"] '
                'to ["sh", "-c", "uptime"]',
            }
        ]
        shown = _refused_at_a_terminal(home)
        before_prompt = shown[: shown.index("serve this policy?")].splitlines()
        assert (
            before_prompt[-1]
            == "in all: 1 LOOSENED, 0 CHANGED, 0 TIGHTENED (loosenings listed first)"
        )


def _refused_at_a_terminal(home: Path) -> str:
    """`sp policy accept` at a terminal answered "n": what the person saw, colours removed."""
    argv = sp_command(["policy", "accept", "--passphrase-file", str(home / "pw")])
    term = Terminal(argv, clean_env(home))
    term.expect("serve this policy? [y/N]:")
    term.type("n")
    assert term.wait() != 0, term.seen
    return re.sub(r"\x1b\[[0-9;]*m", "", term.seen).replace("\r\n", "\n")
