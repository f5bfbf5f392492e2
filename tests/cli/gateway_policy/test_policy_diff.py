"""`sp policy diff` shows what `sp policy accept` would show and accepts nothing; its exit code
says same (0), differs (1) or could not tell (2), as `diff` does."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import POLICY, home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy"

__all__ = ["home"]


def _served(home: Path) -> bool:
    return bool(json.loads(sp(home, "policy", "check", "--json").stdout)["served"])


def test_diff_shows_exactly_what_accept_shows_before_it_asks(home: Path) -> None:
    pw = str(home / "pw")
    with running_gateway(home):
        shown = sp(home, "policy", "diff")
        assert shown.returncode == 1, shown.stdout + shown.stderr
        assert "no policy is accepted yet: every line below is new" in shown.stdout
        assert "+[ssh.hosts.nowhere]" in shown.stdout.splitlines()
        assert not _served(home)  # seeing it accepted nothing
        accepted = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert accepted.returncode == 0, accepted.stderr
        *before_accepting, last = accepted.stdout.splitlines()
        assert last.startswith("accepted policy ")
        assert shown.stdout.splitlines() == before_accepting
        same = sp(home, "policy", "diff")
        assert same.returncode == 0, same.stdout + same.stderr
        assert same.stdout.startswith("no changes")


def test_an_edit_differs_until_accepted_and_says_what_it_means(home: Path) -> None:
    pw = str(home / "pw")
    with running_gateway(home):
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        policy = home / "gateway.toml"
        policy.write_text(POLICY.replace('argv = ["uptime"]', 'argv = ["sh", "-c", "uptime"]'))
        shown = sp(home, "policy", "diff")
        assert shown.returncode == 1
        lines = shown.stdout.splitlines()
        assert '-argv = ["uptime"]' in lines and '+argv = ["sh", "-c", "uptime"]' in lines
        assert "what it means, against the accepted policy:" in lines
        assert any(line.startswith('  LOOSENED   command "uptime"') for line in lines), lines
        as_json = sp(home, "policy", "diff", "--json")
        assert as_json.returncode == 1
        data = json.loads(as_json.stdout)
        assert data["differs"] is True and data["accepted"] is True and data["problems"] == []
        assert {"kind": "added", "text": '+argv = ["sh", "-c", "uptime"]'} in data["diff"]
        assert data["meaning"][0]["weight"] == "loosened"
        assert not _served(home)
        policy.write_text(POLICY)  # back to the accepted text: nothing waits
        back = sp(home, "policy", "diff", "--json")
        assert back.returncode == 0 and json.loads(back.stdout)["differs"] is False


def test_diff_names_what_accept_would_refuse_and_still_shows_the_lines(home: Path) -> None:
    pw = str(home / "pw")
    with running_gateway(home):
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        extra = '\n[credentials.not-in-vault]\nkind = "token"\n'
        (home / "gateway.toml").write_text(POLICY + extra)
        shown = sp(home, "policy", "diff")
        assert shown.returncode == 1, shown.stdout + shown.stderr
        assert "+[credentials.not-in-vault]" in shown.stdout.splitlines()
        assert "not-in-vault" in shown.stdout.split("problem(s):")[1]
        assert "`sp policy accept` refuses this until they are fixed" in shown.stdout
        refused = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert refused.returncode == 1 and "not accepted" in refused.stderr


def test_diff_that_cannot_tell_exits_2(home: Path) -> None:
    down = sp(home, "policy", "diff")
    assert down.returncode == 2 and "no gateway is listening" in down.stderr
    as_json = sp(home, "policy", "diff", "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["exit_code"] == 2
    with running_gateway(home):
        (home / "gateway.toml").write_text(POLICY + "\n[ssh.hosts.nowhere.commands.x\n")
        broken = sp(home, "policy", "diff")
        assert broken.returncode == 2, broken.stdout + broken.stderr
        assert broken.stdout == ""


def test_a_locked_vault_is_never_shown_as_nothing_accepted(home: Path) -> None:
    pw = str(home / "pw")
    with running_gateway(home):
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
    # A gateway started on a locked vault serves nothing: what was accepted is inside it.
    with running_gateway(home, unlock=False):
        locked = sp(home, "policy", "diff")
        assert locked.returncode == 2 and locked.stdout == ""
        assert "the vault is locked" in locked.stderr and "sp vault unlock" in locked.stderr
        # `accept` proves the passphrase itself; what it shows says why every line is new.
        shown = sp(home, "policy", "accept", "--passphrase-file", pw, "--yes")
        assert shown.returncode == 0, shown.stdout + shown.stderr
        assert "no policy is accepted yet" not in shown.stdout
        assert "the vault is locked, so the accepted policy is unread" in shown.stdout
        assert sp(home, "vault", "unlock", "--passphrase-file", pw).returncode == 0
        same = sp(home, "policy", "diff")
        assert same.returncode == 0, same.stdout + same.stderr
