"""A realistic card fits a glance: an SSH command card with a ten-process chain reads in at most
15 lines at 80 columns, what decides first (who asks, what runs, with which credential, what a
yes allows, the time left), the chain folded to what differs from the usual, and the whole
chain one key or flag away."""

from __future__ import annotations

from typing import Any

from safeport.cli.cards.card_text import card_lines
from safeport.cli.render import LABEL_WIDTH, SPACE_MARK, columns

LONG_COMMAND = (
    "journalctl --unit api.service --since '2026-12-06 20:00' --until '2026-12-06 21:00' "
    "-o short-iso -n 500"
)


def proc(pid: int, exe: str, package: str | None, **more: Any) -> dict[str, Any]:
    vouched = f"dpkg {package}: matches" if package else "not from a package"
    return {
        "pid": pid,
        "exe": exe,
        "sha256": f"{pid:064x}",
        "signature": "package" if package else "not-packaged",
        "verified": vouched,
        **more,
    }


def realistic_chain() -> list[dict[str, Any]]:
    """`sp context serve` under Claude Code, in a shell inside tmux, over SSH: ten processes."""
    return [
        proc(
            4242,
            "/usr/bin/python3.12",
            "python3.12-minimal",
            interpreter=True,
            script="/home/ada/src/shop/.venv/bin/sp",
            script_claimed=True,
            script_sha256="cd" * 32,
            script_verified="the file at that path is from no package",
        ),
        proc(4241, "/usr/bin/env", "coreutils"),
        proc(4100, "/home/ada/.local/share/claude/versions/2.1.332", None),
        proc(4000, "/usr/bin/bash", "bash", interpreter=True),
        proc(3990, "/usr/bin/tmux", "tmux"),
        proc(3900, "/usr/bin/bash", "bash", interpreter=True),
        proc(3850, "/usr/lib/openssh/sshd-session", "openssh-server"),
        proc(3800, "/usr/sbin/sshd", "openssh-server"),
        proc(900, "/usr/lib/systemd/systemd", "systemd"),
        proc(1, "/usr/lib/systemd/systemd", "systemd"),
    ]


def realistic_card(**more: Any) -> dict[str, Any]:
    chain = realistic_chain()
    return {
        "id": "card-3f9a1c2b7d4e",
        "user": {"uid": 1000, "name": "ada"},
        "scope": "session",
        "scope_text": "this process may use build-key for build.journal without asking again "
        "until it exits, at most 60 minutes",
        "credential": "build-key",
        "action": "ssh_exec",
        "target": "build",
        "operation": "journal",
        "read_only": False,
        "effect": "may change things",
        "fields": [
            ["host", "deploy@build.example.com:22 (build)"],
            ["command", LONG_COMMAND],
            ["lengths", "since 16 characters, unit 11 characters, until 16 characters"],
        ],
        "showable": True,
        "requester": chain,
        "client": chain[2],
        "client_label": "claude-code",
        "expires_in_s": 292,
        "timeout_s": 300,
        **more,
    }


def labels(lines: list[str]) -> list[str]:
    return [line[:LABEL_WIDTH].strip() for line in lines[1:] if not line.startswith(" ")]


def test_a_realistic_ssh_card_fits_15_lines_at_80_columns_with_no_escaped_space() -> None:
    lines = card_lines(realistic_card(), width=80, unfold_hint="c: the whole chain")
    assert len(lines) <= 15, "\n".join(lines)
    assert all(columns(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert "\\u0020" not in text
    # A line wrapped at a space shows the space as a mark that does not read as an escape.
    assert any(line.endswith(SPACE_MARK) for line in lines)


def test_what_decides_comes_first_and_short() -> None:
    lines = card_lines(realistic_card(), width=80)
    assert lines[0] == "── approval requested · card card-3f9a1c2b7d4e · time left 5 min"
    assert lines[1] == "asked by    ada (uid 1000)"
    assert lines[2] == "action      ssh_exec build / journal · may change things"
    order = labels(lines)
    assert order[:7] == [
        "asked by", "action", "host", "command", "lengths", "credential", "a yes",
    ]  # fmt: skip
    assert order[7:] == ["requester", "client", "ancestors"]


def test_the_chain_is_folded_to_the_requester_its_client_and_a_count_of_the_usual() -> None:
    lines = card_lines(realistic_card(), width=80, unfold_hint="c: the whole chain")
    text = "\n".join(lines)
    assert "ancestors   +8 usual (packaged or signed, no warning); c: the whole chain" in lines
    assert "pid 4242 /usr/bin/python3.12" in text  # the requester
    client = next(line for line in lines if line.startswith("client "))
    assert "pid 4100 /home/ada/.local/share/claude/versions/2.1.332" in client
    for folded in (4241, 4000, 3990, 3900, 3850, 3800, 900, 1):
        assert f"pid {folded} " not in text


def test_the_whole_chain_is_one_switch_away_and_holds_every_process_and_digest() -> None:
    lines = card_lines(realistic_card(), width=80, whole_chain=True)
    text = "\n".join(lines).replace(SPACE_MARK + "\n          \u21aa   ", " ")
    for process in realistic_chain():
        assert f"pid {process['pid']} " in text
        assert process["sha256"][:16] in text
    assert "ancestors" not in text
    assert all(columns(line) <= 80 for line in lines)


def test_the_first_unusual_ancestor_is_shown_with_its_place_in_the_chain() -> None:
    card = realistic_card()
    card["requester"][6] = proc(3850, "/home/ada/bin/sshd-session", None)
    text = "\n".join(card_lines(card, width=80))
    assert "parent 6    pid 3850 /home/ada/bin/sshd-session (not from a package)" in text
    assert "ancestors   +7 usual (packaged or signed, no warning)" in text


def test_a_card_signed_by_a_security_key_is_the_same_card_with_the_key_named() -> None:
    key = {"keys": [{"name": "yubikey 5c"}], "challenge": "x"}
    lines = card_lines(realistic_card(key=key), width=80)
    assert "signed by   a touch of security key yubikey 5c" in lines
    assert len(lines) <= 16
    plain = card_lines(realistic_card(), width=80)
    assert [line for line in lines if not line.startswith("signed by")] == plain
