"""What the human approves is exactly what runs: for random argument values (braces, quotes,
`%`, newlines, Unicode), the card's command string is the byte string a real OpenSSH server
receives, and the card's URL and body are what a recording TLS upstream receives.

The SSH side logs in with a key whose authorized_keys line forces `printf %s
"$SSH_ORIGINAL_COMMAND"`, so the server itself reports the command it was sent.
"""

from __future__ import annotations

import json
import shlex
import unicodedata
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.real_sshd import Sshd, _openssh_private, _public_line
from harness.real_tls import API_HOST, TlsServer
from safeport.action_gateway.approvals.cards import ActionKind, ActionRequest, build_card
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError, HttpAction, SshAction
from safeport.action_gateway.executors.prepare import prepare_http, prepare_ssh
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.shared.schemas.config import HttpOperation, HttpService, SshCommand, SshHost
from safeport.shared.visible_text import inert
from safeport.vault.secrets import SecretBytes, SshKeySecret, TokenSecret

PEER = PeerIdentity(
    uid=1000,
    gid=1000,
    chain=(ProcessInfo(pid=7, start_time=1, uid=1000, name="node", exe="/usr/bin/node",
                       exe_sha256=None),),
)  # fmt: skip
ANYTHING = {"pattern": "(?s).*", "max_length": 256}
EXAMPLES = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Characters that have tripped renderers: template braces, shell and URL syntax, line breaks,
# invisible and right-to-left marks, and ordinary non-ASCII text.
TRICKY = st.sampled_from([*"{}'\"%$`\\;&|<> \n\r\t\x00?#/=+.-", "{a}", "{b}", "%7B", "%%",
                          "\u202e", "\u2028", "\u00e9", "\u65e5", "\U0001f600",
                          "\u200b"])  # fmt: skip
VALUES = st.lists(st.one_of(TRICKY, st.text(max_size=3)), max_size=12).map("".join)


def refusable(value: str) -> bool:
    """What validation refuses before anything is built: control characters, over-long values."""
    return len(value) > 256 or any(unicodedata.category(ch) == "Cc" for ch in value)


def card_for(prepared: SshAction | HttpAction, kind: ActionKind) -> dict[str, str]:
    request = ActionRequest(
        request_id="r",
        kind=kind,
        target_id="t",
        operation_id="o",
        credential="c",
        scope="per-call",
        args={},
        policy_digest="p",
        read_only=False,
        prepared=prepared,
    )
    card = build_card("card", PEER, request, now=0, timeout_s=60)
    return dict(card.fields)


@pytest.fixture
def reporting_key(sshd: Sshd) -> Iterator[SshKeySecret]:
    """A key the server answers with the command it received, instead of running it."""
    key = ed25519.Ed25519PrivateKey.generate()
    keys = sshd.workdir / "authorized_keys" / sshd.user
    before = keys.read_text()
    keys.write_text(
        before + f'command="printf \'%s\' \\"$SSH_ORIGINAL_COMMAND\\"" {_public_line(key)}\n'
    )
    try:
        yield SshKeySecret(SecretBytes(_openssh_private(key)))
    finally:
        keys.write_text(before)


@pytest.fixture(scope="module")
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor(resolver=lambda host, port: ["127.0.0.1"])
    yield executor
    executor.close_all()


@EXAMPLES
@given(a=VALUES, b=VALUES)
def test_the_cards_command_is_the_command_the_ssh_server_receives(
    sshd: Sshd, reporting_key: SshKeySecret, executor: GatewayExecutor, a: str, b: str
) -> None:
    host = SshHost(
        address="127.0.0.1",
        port=sshd.port,
        user=sshd.user,
        credential="k",
        host_keys=[sshd.host_key_line],
    )
    command = SshCommand.model_validate(
        {
            "argv": ["echo", "{a}", "x{b}y", "{a}{b}", "--{b}"],
            "params": {"a": ANYTHING, "b": ANYTHING},
            "allow_leading_dash": ["a", "b"],
            "max_output_bytes": 1 << 20,
        }
    )
    try:
        prepared = prepare_ssh("h", host, "c", command, {"a": a, "b": b})
    except ActionError as refused:
        # Refused while preparing: no card, no connection; only for a declared reason.
        assert refused.failure == "invalid_target"
        assert refusable(a) or refusable(b)
        event("refused before any connection")
        return
    event("sent")
    shown = card_for(prepared, "ssh_exec")["command"]
    received = executor.ssh_exec(prepared, reporting_key).stdout
    assert received == prepared.command_line  # byte for byte (valid UTF-8 both ways)
    assert shown == inert(received)  # the card shows exactly that, made inert
    # One pass: each value lands once, literally, and is never read as a template again.
    assert prepared.command_line == shlex.join(["echo", a, f"x{b}y", a + b, f"--{b}"])


@EXAMPLES
@given(
    env=st.text(min_size=1, max_size=2).flatmap(lambda head: VALUES.map(head.__add__)),
    note=VALUES,
    count=st.integers(min_value=-(2**31), max_value=2**31),
)
def test_the_cards_url_and_body_are_what_the_upstream_receives(
    tls_server: TlsServer, executor: GatewayExecutor, env: str, note: str, count: int
) -> None:
    service = HttpService.model_validate(
        {
            "base_url": tls_server.base_url(),
            "credential": "deploy-token",
            "ca_file": str(tls_server.ca_file),
            "allow_private_addresses": True,
            "timeout_s": 5,
        }
    )
    operation = HttpOperation.model_validate(
        {
            "method": "POST",
            "path": "/echo-target/{env}",
            "query": {"q": "{note}", "both": "{env}-{note}"},
            "json_body": {"env": "{env}", "note": "n={note}", "count": "{count}", "k": ["{env}"]},
            "params": {
                "env": ANYTHING,
                "note": ANYTHING,
                "count": {"type": "int", "min": -(2**31), "max": 2**31},
            },
            "response_fields": ["target"],
        }
    )
    before = len(tls_server.recorded.requests)
    try:
        prepared = prepare_http("s", service, "op", operation, {"env": env, "note": note,
                                                               "count": count})  # fmt: skip
    except ActionError as refused:
        # Refused while preparing (a control character, a dot segment, a leading dash, a
        # value too long): before any connection, so nothing reached the upstream.
        assert refused.failure == "invalid_target"
        assert len(tls_server.recorded.requests) == before
        event("refused before any connection")
        return
    event("sent")
    card = card_for(prepared, "http_request")
    executor.http_request(prepared, TokenSecret(SecretBytes(b"token-for-the-property-test")))
    sent = tls_server.recorded.requests[before:]
    assert len(sent) == 1
    received_url = f"https://{API_HOST}:{tls_server.port}{sent[0]['path']}"
    assert prepared.target.url == received_url
    assert card["request"] == inert(f"POST {received_url}")
    assert prepared.target.body == sent[0]["body"]
    assert json.loads(card["body"]) == json.loads(sent[0]["body"])  # every value, nothing cut
    assert all(ch in " \n" or ch.isprintable() for ch in card["body"])  # nothing hidden
