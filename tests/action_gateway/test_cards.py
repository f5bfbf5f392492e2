"""Cards render everything the agent chose as inert plain text, whole or not at all."""

from __future__ import annotations

import pytest

from safeport.action_gateway.cards import (
    MAX_FIELD_CHARS,
    ActionRequest,
    build_card,
    fill_template,
    inert,
    render_http,
    render_ssh,
)
from safeport.action_gateway.identity import PeerIdentity, ProcessInfo
from safeport.shared.schemas.config import HttpOperation, HttpService, SshCommand, SshHost

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


def test_the_rendered_ssh_command_is_the_quoted_argv() -> None:
    command = SshCommand(
        argv=["systemctl", "status", "{service}"], params={"service": {"pattern": ".*"}}
    )  # type: ignore[dict-item]
    assert render_ssh(HOST, command, {"service": "a b;rm -rf /"}) == (
        "systemctl status 'a b;rm -rf /'"
    )


def test_the_rendered_url_encodes_params_as_single_path_segments() -> None:
    service = HttpService(base_url="https://api.example.com", credential="t")
    operation = HttpOperation(
        method="GET",
        path="/v1/{env}/status",
        query={"q": "{env}"},
        params={"env": {"pattern": ".*"}},
    )  # type: ignore[dict-item]
    assert render_http(service, operation, {"env": "../admin?x=1"}) == (
        "GET https://api.example.com/v1/..%2Fadmin%3Fx%3D1/status?q=..%2Fadmin%3Fx%3D1"
    )


def test_a_card_that_cannot_be_shown_whole_is_not_showable() -> None:
    request = ActionRequest(
        request_id="r",
        kind="ssh_exec",
        target_id="h",
        operation_id="c",
        credential="k",
        scope="per-call",
        args={"a": "x"},
        policy_digest="d",
        read_only=True,
        rendered=(("command", "x" * (MAX_FIELD_CHARS + 1)),),
    )
    card = build_card("c-1", PEER, request, now=0, timeout_s=10)
    assert card.showable is False
    short = build_card(
        "c-2",
        PEER,
        request.__class__(**{**request.__dict__, "rendered": (("c", "ok"),)}),
        now=0,
        timeout_s=10,
    )
    assert short.showable is True and short.view()["fields"] == [["c", "ok"]]


def test_the_journal_shape_never_holds_argument_values() -> None:
    request = ActionRequest(
        request_id="r",
        kind="ssh_exec",
        target_id="h",
        operation_id="c",
        credential="k",
        scope="per-call",
        args={"service": "hunter2"},
        policy_digest="d",
        read_only=True,
    )
    assert "hunter2" not in str(request.shape())
    assert request.shape()["args"] == {"service": {"type": "str", "len": 7}}


def test_fill_template_replaces_only_declared_placeholders() -> None:
    assert fill_template("{a}-{b}", {"a": "1"}) == "1-{b}"
