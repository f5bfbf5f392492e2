"""Cards render the prepared action (the bytes that will run) as inert plain text, whole or not
at all, with what a yes allows and the time left."""

from __future__ import annotations

import json

import pytest

from safeport.action_gateway.approvals.cards import (
    MAX_FIELD_CHARS,
    ActionRequest,
    ApprovalScope,
    build_card,
)
from safeport.action_gateway.executors.interface import HttpAction, SshAction
from safeport.action_gateway.executors.prepare import prepare_http, prepare_ssh
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.shared.schemas.config import (
    HttpOperation,
    HttpService,
    SshCommand,
    SshHost,
)
from safeport.shared.schemas.config_params import ParamSpec
from safeport.shared.visible_text import inert

HOST = SshHost(address="203.0.113.7", user="deploy", credential="k", host_keys=["ssh-ed25519 AAAA"])
PEER = PeerIdentity(
    uid=1,
    gid=1,
    chain=(
        ProcessInfo(
            pid=5, start_time=1, uid=1, name="python3", exe="/usr/bin/python3", exe_sha256=None
        ),
    ),
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred", "\\u001b[31mred"),
        ("a\u202eb", "a\\u202eb"),
        ("nul\x00", "nul\\u0000"),
        ("line\nfake: approved", "line\\u000afake: approved"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("back\\u001b", "back\\\\u001b"),  # an escape sequence typed as text stays distinguishable
        ("café ok", "café ok"),
    ],
)
def test_inert_escapes_what_could_restyle_or_hide_text(raw: str, shown: str) -> None:
    assert inert(raw) == shown


def ssh_request(
    prepared: SshAction, scope: ApprovalScope = "per-call", **args: str
) -> ActionRequest:
    return ActionRequest(
        request_id="r",
        kind="ssh_exec",
        target_id=prepared.host_id,
        operation_id=prepared.command_id,
        credential="k",
        scope=scope,
        args=args or {"a": "x"},
        policy_digest="d",
        read_only=True,
        prepared=prepared,
    )


def test_the_card_shows_the_exact_command_string_that_is_sent() -> None:
    command = SshCommand(
        argv=["systemctl", "status", "{service}"], params={"service": ParamSpec(pattern=".*")}
    )
    prepared = prepare_ssh("h", HOST, "c", command, {"service": "a b;rm -rf /"})
    assert prepared.command_line == "systemctl status 'a b;rm -rf /'"
    card = build_card("c-1", PEER, ssh_request(prepared), now=0, timeout_s=10)
    assert dict(card.fields)["command"] == prepared.command_line
    assert dict(card.fields)["host"] == "deploy@203.0.113.7:22 (h)"


def test_a_value_that_looks_like_a_placeholder_is_never_expanded_again() -> None:
    command = SshCommand(
        argv=["echo", "{a}", "{b}"],
        params={"a": ParamSpec(pattern="[{}a-z]+"), "b": ParamSpec(pattern="[{}a-z]+")},
    )
    prepared = prepare_ssh("h", HOST, "c", command, {"a": "{b}", "b": "rm"})
    assert prepared.command_line == "echo '{b}' rm"
    card = build_card("c-1", PEER, ssh_request(prepared), now=0, timeout_s=10)
    assert dict(card.fields)["command"] == "echo '{b}' rm"


def test_the_card_shows_the_full_url_and_every_byte_of_the_body() -> None:
    service = HttpService(base_url="https://API.Example.com", credential="t")
    operation = HttpOperation(
        method="POST",
        path="/v1/{env}/deploy",
        query={"q": "{env}"},
        json_body={"image": "{image}", "replicas": "{replicas}", "note": "x {env}"},
        params={
            "env": ParamSpec(pattern=".*"),
            "image": ParamSpec(pattern=".*"),
            "replicas": ParamSpec(type="int", min=1, max=5000),
        },
    )
    args = {"env": "a/b?x={c}", "image": "attacker.example/backdoor:1", "replicas": 1000}
    prepared = prepare_http("deploy-api", service, "op", operation, args)
    fields = dict(build_card("c", PEER, http_request(prepared), now=0, timeout_s=9).fields)
    assert fields["request"] == f"POST {prepared.target.url}"
    assert prepared.target.url == (
        "https://api.example.com/v1/a%2Fb%3Fx%3D%7Bc%7D/deploy?q=a%2Fb%3Fx%3D%7Bc%7D"
    )
    assert prepared.target.body is not None
    assert json.loads(fields["body"]) == json.loads(prepared.target.body)
    assert '"image": "attacker.example/backdoor:1"' in fields["body"]
    assert '"replicas": 1000' in fields["body"]
    assert "Authorization (the credential)" in fields["headers"]
    assert "Content-Type" in fields["headers"]


def test_a_body_value_cannot_add_a_line_or_an_escape_to_the_card() -> None:
    service = HttpService(base_url="https://api.example.com", credential="t")
    operation = HttpOperation(
        method="POST", path="/x", json_body={"v": "{v}"}, params={"v": ParamSpec(pattern="(?s).*")}
    )
    prepared = prepare_http(
        "s", service, "op", operation, {"v": 'a\u2028"approved": true\u202e\u0085'}
    )
    body = dict(build_card("c", PEER, http_request(prepared), now=0, timeout_s=9).fields)["body"]
    assert body.count("\n") == 2  # `{`, the one member, `}`
    for hidden in ("\u2028", "\u202e", "\u0085"):
        assert hidden not in body
    assert '\\"approved\\": true' in body  # the quote stays inside the JSON string
    assert json.loads(body) == json.loads(prepared.target.body or b"")  # the same value


def http_request(prepared: SshAction | HttpAction) -> ActionRequest:
    return ActionRequest(
        request_id="r",
        kind="http_request",
        target_id="s",
        operation_id="op",
        credential="t",
        scope="per-call",
        args={},
        policy_digest="d",
        read_only=False,
        prepared=prepared,
    )


def test_a_card_that_cannot_be_shown_whole_is_not_showable() -> None:
    command = SshCommand(argv=["true"])
    long = SshAction("h", HOST, "c", command, "x" * (MAX_FIELD_CHARS + 1))
    card = build_card("c-1", PEER, ssh_request(long), now=0, timeout_s=10)
    assert card.showable is False
    short = build_card("c-2", PEER, ssh_request(SshAction("h", HOST, "c", command, "ok")), now=0,
                       timeout_s=10)  # fmt: skip
    assert short.showable is True
    assert ("command", "ok") in short.view(0).fields


def test_the_card_says_what_a_yes_allows_and_how_long_is_left() -> None:
    prepared = SshAction("h", HOST, "c", SshCommand(argv=["uptime"]), "uptime")
    session = build_card(
        "c", PEER, ssh_request(prepared, scope="session"), now=100, timeout_s=120,
        session_max_s=720 * 60,
    )  # fmt: skip
    assert session.view(100).scope_text == (
        "this client process may use k without asking again until it exits, at most 720 "
        "minutes; a new client process asks again"
    )
    assert session.view(100).expires_in_s == 120
    assert session.view(145).expires_in_s == 75  # it counts down
    assert session.view(999).expires_in_s == 0
    once = build_card("c", PEER, ssh_request(prepared), now=0, timeout_s=60)
    assert once.view(0).scope_text == "this one request only"
    assert once.view(0).effect == "read-only"
    assert (
        build_card("c", PEER, http_request(prepared), now=0, timeout_s=9).view(0).effect
        == "may change things"
    )


def test_the_journal_shape_never_holds_argument_values() -> None:
    prepared = SshAction("h", HOST, "c", SshCommand(argv=["x"]), "x hunter2")
    request = ssh_request(prepared, service="hunter2")
    assert "hunter2" not in str(request.shape())
    assert request.shape()["args"] == {"service": {"type": "str", "len": 7}}
    assert request.shape()["prepared_sha256"] == prepared.digest()


@pytest.mark.parametrize(
    "hidden", ["\u1160", "\u3164", "\uffa0", "\u2800", "\u034f", "\ufe0f", "\u00a0", "\u0301"]
)
def test_a_printable_but_invisible_character_is_escaped_on_the_card(hidden: str) -> None:
    """`alice` and `alice` + a Hangul filler must not look the same to the human."""
    service = HttpService(base_url="https://api.example.com", credential="t")
    operation = HttpOperation(
        method="POST",
        path="/x",
        json_body={"user": "{v}"},
        params={"v": ParamSpec(pattern="(?s).*")},
    )
    prepared = prepare_http("s", service, "op", operation, {"v": f"alice{hidden}"})
    fields = dict(build_card("c", PEER, http_request(prepared), now=0, timeout_s=9).fields)
    assert hidden not in fields["body"] and f"\\u{ord(hidden):04x}" in fields["body"]
    assert json.loads(fields["body"]) == {"user": f"alice{hidden}"}
    assert "look-alike" in fields["note"]
    command = SshAction("h", HOST, "c", SshCommand(argv=["x"]), f"echo alice{hidden}")
    shown = dict(build_card("c", PEER, ssh_request(command), now=0, timeout_s=9).fields)
    assert hidden not in shown["command"]


def test_a_plain_ascii_card_carries_no_look_alike_note() -> None:
    prepared = SshAction("h", HOST, "c", SshCommand(argv=["uptime"]), "uptime")
    assert "note" not in dict(
        build_card("c", PEER, ssh_request(prepared), now=0, timeout_s=9).fields
    )


def test_the_card_marks_an_interpreters_script_as_its_claim_never_a_match() -> None:
    from safeport.action_gateway.approvals.cards import _process_line

    python = ProcessInfo(
        pid=9, start_time=1, uid=1000, name="python3.11", exe="/usr/bin/python3.11",
        exe_sha256="ab" * 32, signature="package", origin="dpkg python3.11-minimal",
        interpreter=True, script="/usr/lib/python3.11/timeit.py",
        script_signature="package", script_origin="dpkg libpython3.11-stdlib",
    )  # fmt: skip
    line = _process_line(python)
    assert line.verified == "dpkg python3.11-minimal: matches"  # the binary: attested
    assert line.script_claimed is True
    assert "matches" not in str(line.script_verified)
    assert "libpython3.11-stdlib" in str(line.script_verified)
