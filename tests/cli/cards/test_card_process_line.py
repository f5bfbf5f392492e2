"""A card's process lines as `sp approvals watch` and `list` print them."""

from __future__ import annotations

from safeport.cli.cards.card_text import card_lines, process_text

PYTHON = {
    "pid": 9,
    "exe": "/usr/bin/python3.11",
    "sha256": "ab" * 32,
    "signature": "package",
    "verified": "dpkg python3.11-minimal: matches",
    "interpreter": True,
    "script": "/venv/bin/sp",
    "script_sha256": "cd" * 32,
    "script_claimed": True,
    "script_verified": "the file at that path is pip safeport 0.1.0's, as installed",
    "injected_env": [["PYTHONPATH", "/home/u/shadow"], ["LD_PRELOAD", "/tmp/x.so"]],
}
NODE = {
    "pid": 5,
    "exe": "/usr/bin/node",
    "sha256": "ef" * 32,
    "signature": "not-packaged",
    "verified": "not from a package",
}


def test_a_process_line_says_what_vouches_for_it_once_and_every_injecting_variable() -> None:
    line = process_text(PYTHON)
    assert line.count("dpkg python3.11-minimal: matches") == 1
    assert "interpreter (attested) /usr/bin/python3.11" in line
    assert (
        "script (claimed by the process) /venv/bin/sp sha256 cdcdcdcdcdcdcdcd "
        "(the file at that path is pip safeport 0.1.0's, as installed)"
    ) in line
    assert "INJECTS CODE: PYTHONPATH=/home/u/shadow" in line
    assert "INJECTS CODE: LD_PRELOAD=/tmp/x.so" in line


def test_only_an_interpreter_shows_a_script() -> None:
    assert "script" not in process_text(NODE)
    assert process_text(NODE).endswith("(not from a package)")


def test_an_unreadable_environment_or_a_changed_script_is_said_out_loud() -> None:
    line = process_text({**PYTHON, "environ": "unreadable", "script_changed": True})
    assert "ENVIRONMENT UNREADABLE" in line and "CHANGED after the process started" in line


def test_the_whole_card_keeps_the_flags_at_80_columns() -> None:
    card = {"id": "c-1", "requester": [PYTHON, NODE], "client": NODE, "fields": []}
    text = "\n".join(card_lines(card, width=80))
    assert all(len(row) <= 80 for row in text.splitlines())
    assert "PYTHONPATH=/home/u/shadow" in text.replace("\n", "").replace(" ", "")


def test_every_card_says_which_human_asked_first() -> None:
    card = {"id": "c1", "user": {"uid": 1001, "name": "alice"}, "requester": []}
    lines = card_lines(card, width=80)
    assert lines[1] == "asked by    alice (uid 1001)"
    gone = card_lines({"id": "c2", "user": {"uid": 4242, "name": None}}, width=80)
    assert gone[1] == "asked by    no such user (uid 4242)"
    assert card_lines({"id": "c3"}, width=80)[1] == "asked by    unknown user"


def test_a_claimed_script_is_never_said_to_match() -> None:
    """The script path is the process's own words; a card must not vouch for it."""
    line = process_text(PYTHON)
    claimed = line.split("script (claimed by the process)", 1)[1]
    assert "matches" not in claimed
    assert "interpreter (attested)" not in process_text(NODE)
