"""`[callers]` rules: no table admits the gateway's own uid; an empty list admits nobody."""

from __future__ import annotations

import pytest

from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.action_gateway.policy.caller_rules import (
    CallerRefused,
    check_caller,
    describe_default,
)
from safeport.shared.schemas.config import CallerRule, Callers

SHA = "a" * 64


def _proc(pid: int, exe: str, sha: str | None = SHA) -> ProcessInfo:
    return ProcessInfo(
        pid=pid,
        start_time=pid * 10,
        uid=1000,
        name=exe.rsplit("/", 1)[-1],
        exe=exe,
        exe_sha256=sha,
    )


PEER = PeerIdentity(
    uid=1000,
    gid=1000,
    chain=(
        _proc(30, "/usr/bin/python3.12"),
        _proc(20, "/opt/claude/claude"),
        _proc(1, "/sbin/init"),
    ),
)


def test_no_callers_table_admits_a_process_of_the_gateways_uid() -> None:
    check_caller(None, PEER, frozenset({1000}))


def test_no_callers_table_still_refuses_another_uid() -> None:
    with pytest.raises(CallerRefused, match="does not serve"):
        check_caller(None, PEER, frozenset({1001}))


def test_an_empty_rule_list_admits_nobody() -> None:
    with pytest.raises(CallerRefused, match="admits no callers"):
        check_caller(Callers(rules=[]), PEER, frozenset({1000}))


@pytest.mark.parametrize(
    "rule",
    [
        CallerRule(exe="/usr/bin/python3.12"),
        CallerRule(exe_sha256=SHA),
        CallerRule(uid=1000, ancestor_exe="/opt/claude/claude"),
        CallerRule(exe="/usr/bin/python3.12", exe_sha256=SHA, ancestor_exe="/opt/claude/claude"),
    ],
)
def test_a_matching_rule_admits(rule: CallerRule) -> None:
    check_caller(Callers(rules=[rule]), PEER, frozenset({1000}))


@pytest.mark.parametrize(
    "rule",
    [
        CallerRule(exe="/usr/bin/node"),
        CallerRule(exe_sha256="b" * 64),
        CallerRule(uid=0),
        CallerRule(ancestor_exe="/usr/bin/code"),
        CallerRule(ancestor_exe="/usr/bin/python3.12"),  # the peer itself is not its ancestor
        CallerRule(team_id="ABCDE12345"),
        CallerRule(exe="/usr/bin/python3.12", exe_sha256="b" * 64),  # every field must match
    ],
)
def test_a_rule_that_does_not_match_refuses(rule: CallerRule) -> None:
    with pytest.raises(CallerRefused, match="no `\\[callers\\]` rule"):
        check_caller(Callers(rules=[rule]), PEER, frozenset({1000}))


def test_an_unreadable_digest_never_matches_a_digest_rule() -> None:
    hidden = PeerIdentity(uid=1000, gid=1000, chain=(_proc(5, "<unreadable>", sha=None),))
    with pytest.raises(CallerRefused):
        check_caller(Callers(rules=[CallerRule(exe_sha256=SHA)]), hidden, frozenset({1000}))


def test_the_default_is_stated_out_loud() -> None:
    assert "any process running as your user may propose" in describe_default(None)
    assert "no process may propose" in describe_default(Callers(rules=[]))
    assert "1 rule(s)" in describe_default(Callers(rules=[CallerRule(uid=1)]))


def test_a_dedicated_gateway_admits_each_named_human_and_no_one_else() -> None:
    humans = frozenset({1000, 1002})
    check_caller(None, PEER, humans)  # PEER runs as 1000
    with pytest.raises(CallerRefused, match="does not serve"):
        check_caller(None, PEER, frozenset({1002}))
    with pytest.raises(CallerRefused):
        check_caller(None, PEER, frozenset())


def test_an_interpreter_is_refused_by_a_rule_naming_its_binary_and_told_why() -> None:
    python = ProcessInfo(
        pid=30, start_time=300, uid=1000, name="python3.12", exe="/usr/bin/python3.12",
        exe_sha256=SHA, signature="package", environ="read", interpreter=True,
        script="/usr/lib/python3.12/timeit.py", script_signature="package",
    )  # fmt: skip
    peer = PeerIdentity(uid=1000, gid=1000, chain=(python, *PEER.chain[1:]))
    rule = CallerRule(exe="/usr/bin/python3.12", ancestor_exe="/opt/claude/claude")
    with pytest.raises(CallerRefused, match='interpreter = "any script"'):
        check_caller(Callers(rules=[rule]), peer, frozenset({1000}))
    said = rule.model_copy(update={"interpreter": "any script"})
    check_caller(Callers(rules=[said]), peer, frozenset({1000}))
    # A uid rule names no program: it is about the user, and admits the interpreter as before.
    check_caller(Callers(rules=[CallerRule(uid=1000)]), peer, frozenset({1000}))
