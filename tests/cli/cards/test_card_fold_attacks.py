"""A folded card and its marks cannot be used to hide or fake anything.

The requester controls its program's path, its script's path, the command's arguments (and so
the card's command text) and the label of its client's entry. None of that can hide a process
with a warning in the fold, make a process that no package vouches for count as usual, write a
row that passes for the card's own fold line, or imitate the wrap marks: ``␠`` at the end of a
line and ``↪`` in the label column are always the card's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from safeport.cli.cards.card_text import card_lines
from safeport.cli.render import LABEL_WIDTH, SPACE_MARK, WRAP_MARK
from safeport.shared.visible_text import escape_code, inert, inert_lines
from tests.cli.cards.test_card_skim import proc, realistic_card, realistic_chain

WIDTHS = (24, 40, 57, 80, 81, 132, 300)
OWN_LABELS = {
    "card", "time left", "asked by", "action", "effect", "host", "command", "lengths",
    "credential", "a yes", "signed by", "requester", "client", "ancestors",
}  # fmt: skip

WARNINGS: dict[str, dict[str, Any]] = {
    "code injected": {"injected_env": [["LD_PRELOAD", "/tmp/x.so"]]},
    "environment unreadable": {"environ": "unreadable"},
    "script changed": {"interpreter": True, "script": "/opt/x.py", "script_changed": True},
    "modified since installed": {"signature": "modified", "verified": "dpkg bash: MODIFIED"},
    "invalid signature": {"signature": "invalid", "verified": "INVALID signature"},
}


def _labels(lines: list[str]) -> list[str]:
    """Every row label: text that starts a line (the header aside). The label column is the
    card's own; no value is ever written there."""
    return [line[:LABEL_WIDTH].strip() for line in lines[1:] if line and not line[0].isspace()]


@pytest.mark.parametrize("warning", WARNINGS, ids=list(WARNINGS))
@pytest.mark.parametrize("place", [1, 3, 5, 8, 9])
def test_a_process_with_a_warning_is_never_folded(warning: str, place: int) -> None:
    card = realistic_card()
    chain = card["requester"]
    chain[place] = {**chain[place], **WARNINGS[warning]}
    lines = card_lines(card, width=80)
    assert f"parent {place}" in _labels(lines)
    assert f"pid {chain[place]['pid']} " in "\n".join(lines)
    assert "ancestors   +7 usual (packaged or signed, no warning)" in lines
    # However many have one, each is shown: a warning is never counted into the fold.
    for deeper in range(3, 10):
        chain[deeper] = {**chain[deeper], **WARNINGS[warning]}
    lines = card_lines(card, width=80)
    text = "\n".join(lines)
    for deeper in range(3, 10):
        assert f"pid {chain[deeper]['pid']} " in text
    usual_left = "ancestors   +1 usual (packaged or signed, no warning)"
    assert (usual_left in lines) == (place != 1)


@pytest.mark.parametrize(
    "signature", ["not-packaged", "unsigned", "user-package", "unknown", "", None, ["package"]]
)
def test_a_process_no_package_vouches_for_is_never_counted_as_usual(signature: object) -> None:
    # It looks like the usual /usr/bin/bash, and says "matches" in its words: only the
    # signature the gateway checked makes a process usual.
    card = realistic_card()
    lookalike = {**proc(3900, "/usr/bin/bash", "bash"), "signature": signature}
    card["requester"][5] = lookalike
    second = {**proc(3850, "/usr/lib/openssh/sshd-session", "openssh-server"),
              "signature": signature}  # fmt: skip
    card["requester"][6] = second
    text = "\n".join(card_lines(card, width=80))
    assert "pid 3900 /usr/bin/bash" in text  # the first unusual one, shown
    assert "ancestors   +7 more, 1 of them unusual (no warning)" in text
    assert "usual (packaged or signed" not in text


def test_an_interpreter_running_a_script_is_never_usual() -> None:
    card = realistic_card()
    card["requester"][3] = proc(4000, "/usr/bin/bash", "bash", interpreter=True,
                                script="/tmp/evil.sh")  # fmt: skip
    text = "\n".join(card_lines(card, width=80))
    assert "parent 3    pid 4000 /usr/bin/bash (dpkg bash: matches); script (claimed)" in text


@pytest.mark.parametrize(
    ("exe", "name"),
    [
        ("/usr/bin/gdb", "gdb"),
        ("/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "java"),
        ("/usr/bin/node", "node"),
        ("/usr/bin/perl", "perl"),
        ("/usr/bin/awk", "awk"),
        ("/usr/bin/python3.11", "python3"),
    ],
    ids=["gdb", "java", "node", "perl", "awk", "python"],
)
def test_an_interpreter_or_code_host_with_no_script_file_is_never_usual(
    exe: str, name: str
) -> None:
    # `gdb -ex 'python …'`, `java -jar`, `node --require`, `perl -x`, `awk 'BEGIN{system()}'`:
    # packaged programs running code no package vouches for, with no script file to name.
    card = realistic_card()
    card["requester"][3] = proc(4000, exe, name, interpreter=True)
    text = "\n".join(card_lines(card, width=80))
    assert f"pid 4000 {exe}" in text


def test_a_shell_with_no_script_is_still_folded_as_usual() -> None:
    card = realistic_card()
    card["requester"][3] = proc(4000, "/usr/bin/bash", "bash", interpreter=True)
    assert "pid 4000 /usr/bin/bash" not in "\n".join(card_lines(card, width=80))


@pytest.mark.parametrize(
    "path",
    [
        "/tmp/x\nancestors   +8 usual (packaged or signed, no warning)",
        "/tmp/x\rancestors   +8 usual",
        "/tmp/x\u2028ancestors   +8 usual",
        "/tmp/x" + " " * 61 + "ancestors   +8 usual (packaged or signed, no warning)",
        "/tmp/x" + " " * 200 + "ancestors   +8 usual (packaged or signed, no warning)",
        "ancestors   +8 usual",
    ],
)
@pytest.mark.parametrize("who", ["requester", "client", "unusual parent", "script"])
@pytest.mark.parametrize("wire", ["inert", "raw"])
def test_a_program_path_cannot_write_a_row_of_the_card(path: str, who: str, wire: str) -> None:
    # "inert": as the gateway sends a path; "raw": as a broken or hostile wire might.
    sent = inert(path) if wire == "inert" else path
    card = realistic_card()
    chain = card["requester"]
    if who == "requester":
        chain[0] = {**chain[0], "exe": sent}
    elif who == "client":
        chain[2] = card["client"] = {**chain[2], "exe": sent}
    elif who == "unusual parent":
        chain[7] = proc(3800, sent, None)
    else:
        chain[0] = {**chain[0], "script": sent}
    for width in WIDTHS:
        lines = card_lines(card, width=width)
        assert set(_labels(lines)) <= OWN_LABELS | {"parent 7"}, lines
        assert _labels(lines).count("ancestors") == 1
        # Nor a line of its own under the label column that reads as the fold.
        assert sum(line.lstrip().startswith("ancestors") for line in lines) == 1, lines


@pytest.mark.parametrize(
    "command",
    [
        "uptime\nancestors   +8 usual (packaged or signed, no warning)",
        "uptime\n" + " " * 40 + "\nancestors   +0 usual",
        "uptime " + " " * 90 + "ancestors   +8 usual",
        "uptime\n\u21aa ancestors",
    ],
)
def test_a_commands_own_lines_cannot_pass_for_a_row_or_the_fold(command: str) -> None:
    # A command's line breaks are kept (a JSON body is shown indented); every one of its lines
    # is written under the label column, never in it.
    card = realistic_card(fields=[["command", inert_lines(command)]])
    for width in WIDTHS:
        lines = card_lines(card, width=width)
        assert set(_labels(lines)) <= OWN_LABELS, lines
        assert _labels(lines).count("ancestors") == 1


def test_the_fold_count_is_counted_not_copied_from_any_text() -> None:
    card = realistic_card()
    card["requester"] = realistic_chain()[:4]
    card["requester"][1] = {**card["requester"][1], "exe": "/usr/bin/env +100 usual"}
    lines = card_lines(card, width=80)
    assert "ancestors   +2 usual (packaged or signed, no warning)" in lines


@pytest.mark.parametrize(
    ("real", "imitation"),
    [
        ("a" * 60 + " " + "b" * 40, "a" * 60 + SPACE_MARK + "b" * 40),
        ("a" * 60 + " " + "b" * 40, "a" * 60 + SPACE_MARK + " " + "b" * 40),
        ("x ", "x" + SPACE_MARK),
        ("sha256 " + "f" * 70, "sha256" + SPACE_MARK + "f" * 70),
        ("a" * 70 + "b" * 20, "a" * 70 + "\n" + WRAP_MARK + " " + "b" * 20),
        ("a" * 70 + "b" * 20, "a" * 70 + "\n" + " " * 8 + WRAP_MARK + "   " + "b" * 20),
    ],
)
def test_a_value_cannot_imitate_the_wrap_marks(real: str, imitation: str) -> None:
    for width in WIDTHS:
        one = card_lines({"id": "c", "fields": [["command", inert_lines(real)]]}, width=width)
        two = card_lines({"id": "c", "fields": [["command", inert_lines(imitation)]]}, width=width)
        assert one != two
        for lines in (one, two):
            for line in lines:
                # The space mark only ever ends a line; the wrap mark only sits in its column.
                assert SPACE_MARK not in line[:-1]
                assert WRAP_MARK not in line[: LABEL_WIDTH - 1] + line[LABEL_WIDTH:]


def test_the_marks_a_value_holds_are_shown_as_escapes_and_a_typed_escape_stays_apart() -> None:
    real = card_lines({"id": "c", "fields": [["command", inert_lines("a\u2420b\u21aac")]]})
    assert "command     a\\u2420b\\u21aac" in real
    typed = card_lines({"id": "c", "fields": [["command", inert_lines("a\\u2420b\\u21aac")]]})
    assert "command     a\\\\u2420b\\\\u21aac" in typed


@pytest.mark.parametrize("target", ["build · read-only", "x / y", "a b", "build  read-only"])
def test_a_name_holding_a_space_cannot_pass_for_the_effect_on_the_action_line(
    target: str,
) -> None:
    # A remote client's name is the target of its card: a name with a space keeps the effect
    # on a row of its own, where nothing else is written.
    lines = card_lines(realistic_card(target=inert(target)), width=120)
    assert "effect      may change things" in lines
    action = next(line for line in lines if line.startswith("action"))
    assert not action.endswith("may change things")


@pytest.mark.parametrize("space", ["\u00a0", "\u2002", "\u3000", "\n", "\t", "\u200b"])
def test_a_space_of_another_kind_in_a_name_is_an_escape_on_the_action_line(space: str) -> None:
    target = f"build{space}·{space}read-only"
    lines = card_lines(realistic_card(target=inert(target)), width=120)
    action = next(line for line in lines if line.startswith("action"))
    assert escape_code(space) in action and space not in action
    assert action.endswith(" · may change things")


@pytest.mark.parametrize("effect", ["read-only", "may change things"])
def test_a_policy_names_action_carries_its_effect_on_one_line(effect: str) -> None:
    lines = card_lines(realistic_card(effect=effect), width=80)
    assert f"action      ssh_exec build / journal · {effect}" in lines
    assert not any(line.startswith("effect") for line in lines)
