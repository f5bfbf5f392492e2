"""Attacks on the SSH executor: agent-chosen values, hostile servers, and key-material leaks.

Each test tries to make the executor run more than the declared argv, talk to a server that is
not pinned, hang, or show the private key or its passphrase. The real OpenSSH sshd plays the
legitimate server; a scripted paramiko server and raw TCP servers play the hostile ones.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Iterator
from functools import partial

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization

from harness.real_sshd import Sshd
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import SshCommand, SshHost
from safeport.vault.secrets import SecretBytes, SshKeySecret
from tests.action_gateway.executors.hostile_ssh import (
    banner_then_silence,
    running_paramiko_server,
    running_raw_server,
    trickle_banner,
)
from tests.action_gateway.executors.planned import PlannedSsh, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.ssh"

pytestmark = pytest.mark.integration

ANY = {"pattern": "^.{0,4096}$", "max_length": 4096}
PASSPHRASE = "CANARY-passphrase-91b2"


def _host(port: int, keys: list[str], user: str = "deploy", **extra: object) -> SshHost:
    return SshHost.model_validate(
        {
            "address": "127.0.0.1",
            "port": port,
            "user": user,
            "host_keys": keys,
            "credential": "build-key",
            "connect_timeout_s": 5,
            **extra,
        }
    )


def _real(sshd: Sshd, **extra: object) -> SshHost:
    return _host(sshd.port, [sshd.host_key_line], sshd.user, **extra)


def _action(
    host: SshHost, argv: list[str], args: dict[str, str | int], **spec: object
) -> PlannedSsh:
    params = spec.pop("params", dict.fromkeys(args, ANY))
    command = SshCommand.model_validate({"argv": argv, "params": params, **spec})
    return PlannedSsh("build", host, "cmd", command, args)


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor())
    yield executor
    executor.close_all()


def _fails(call: Callable[[], object], failure: str) -> ActionError:
    with pytest.raises(ActionError) as caught:
        call()
    assert caught.value.failure == failure, caught.value.message
    return caught.value


def _everything_said(error: BaseException) -> str:
    text = "".join(traceback.format_exception(error))
    if isinstance(error, ActionError):
        text += error.diagnostic() + repr(error)
    seen: BaseException | None = error
    while seen is not None:
        text += repr(seen) + str(seen.args)
        seen = seen.__cause__ or seen.__context__
    return text


# --- the agent's values: nothing but one literal argument each -----------------------------

LITERALS = [
    "x; touch /tmp/sp-owned",
    "$(id)",
    "`id`",
    "${IFS}id",
    "'",
    '"',
    "a'b\"c\\'d",
    "\\",
    "*",
    "~root",
    "{a,b}",
    "!!",
    "a b  c",
    "$'\\x41'",
    "ä€\U0001d518",  # Latin-1, BMP and astral characters
    "\u2028\u2029\u0085\u00a0",  # Unicode line and paragraph separators, NEL, NBSP
    "\x9b31m\x85",  # C1 controls: data to the shell, not syntax
    "\u2212oProxyCommand=id",  # a minus sign that is not a hyphen
    " -x",  # a leading space: the word starts with a space, not a dash
    "a=b",
    "",
    "w" * 4096,
]


def test_every_hostile_value_arrives_as_exactly_one_literal_argument(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    names = [f"p{i}" for i in range(len(LITERALS))]
    argv = ["printf", "%s\\0", *(f"{{{name}}}" for name in names)]
    action = _action(_real(sshd), argv, dict(zip(names, LITERALS, strict=True)))
    result = executor.ssh_exec(action, sshd.secret())
    assert result.exit_status == 0
    assert result.stdout.split("\0")[:-1] == LITERALS


def test_a_value_that_looks_like_a_placeholder_is_not_expanded_again(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    action = _action(
        _real(sshd), ["printf", "%s|%s", "{a}", "pre-{b}-post"], {"a": "{b}", "b": "{a}"}
    )
    assert executor.ssh_exec(action, sshd.secret()).stdout == "{b}|pre-{a}-post"


@pytest.mark.parametrize(
    "value", ["-oProxyCommand=id", "--help", "-", "--", "-\u2028", "-" + "w" * 100]
)
def test_a_leading_dash_in_any_position_is_refused_before_connecting(
    sshd: Sshd, executor: PreparingExecutor, value: str
) -> None:
    for argv in (["printf", "%s", "{v}"], ["printf", "%s", "{v}suffix"]):
        action = _action(_real(sshd), argv, {"v": value})
        error = _fails(partial(executor.ssh_exec, action, sshd.secret()), "invalid_target")
        assert len(value) < 3 or value not in error.diagnostic()
    assert executor.pooled_ssh_connections == 0


@pytest.mark.parametrize("value", [-1, -(2**63)])
def test_a_negative_integer_is_a_leading_dash_too(
    sshd: Sshd, executor: PreparingExecutor, value: int
) -> None:
    action = _action(_real(sshd), ["echo", "{n}"], {"n": value}, params={"n": {"type": "int"}})
    _fails(lambda: executor.ssh_exec(action, sshd.secret()), "invalid_target")


@pytest.mark.parametrize(
    "value",
    [True, 1.5, "7", 2**63, 10**5000, None, [1]],
    ids=["bool", "float", "str", "2**63", "10**5000", "null", "list"],
)
def test_an_integer_param_takes_only_a_64_bit_integer(
    sshd: Sshd, executor: PreparingExecutor, value: object
) -> None:
    action = _action(_real(sshd), ["echo", "{n}"], {}, params={"n": {"type": "int"}})
    args = {"n": value}
    _fails(  # refused while preparing, before any card or connection
        lambda: executor.ssh_exec(
            PlannedSsh("build", action.host, "cmd", action.command, args), sshd.secret()
        ),
        "invalid_target",
    )
    assert executor.pooled_ssh_connections == 0


def test_the_largest_64_bit_integer_still_works(sshd: Sshd, executor: PreparingExecutor) -> None:
    action = _action(_real(sshd), ["echo", "{n}"], {"n": 2**63 - 1}, params={"n": {"type": "int"}})
    assert executor.ssh_exec(action, sshd.secret()).stdout == f"{2**63 - 1}\n"


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00b", "a\tb", "\x1b[2J", "a\x7f"])
def test_control_characters_are_refused_even_by_a_permissive_pattern(
    sshd: Sshd, executor: PreparingExecutor, value: str
) -> None:
    action = _action(
        _real(sshd), ["printf", "%s", "{v}"], {"v": value}, params={"v": {"pattern": "(?s).*"}}
    )
    _fails(lambda: executor.ssh_exec(action, sshd.secret()), "invalid_target")
    assert executor.pooled_ssh_connections == 0


def test_a_command_that_quoting_makes_too_long_is_refused_before_connecting(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    # 30 values of 4096 quotes each: within every param's max_length, but ~600 KiB once quoted,
    # which sshd would answer by dropping the connection.
    names = [f"p{i}" for i in range(30)]
    argv = ["printf", "%s", *(f"{{{name}}}" for name in names)]
    action = _action(_real(sshd), argv, dict.fromkeys(names, "'" * 4096))
    error = _fails(lambda: executor.ssh_exec(action, sshd.secret()), "invalid_target")
    assert "longer than" in error.message
    assert executor.pooled_ssh_connections == 0


def test_a_command_just_under_the_limit_still_runs(sshd: Sshd, executor: PreparingExecutor) -> None:
    names = [f"p{i}" for i in range(30)]
    argv = ["printf", "%s", *(f"{{{name}}}" for name in names)]
    action = _action(_real(sshd), argv, dict.fromkeys(names, "w" * 4096), max_output_bytes=1 << 20)
    result = executor.ssh_exec(action, sshd.secret())
    assert (result.exit_status, len(result.stdout)) == (0, 30 * 4096)


def test_a_value_over_max_length_is_refused(sshd: Sshd, executor: PreparingExecutor) -> None:
    action = _action(_real(sshd), ["printf", "%s", "{v}"], {"v": "w" * 4097})
    error = _fails(lambda: executor.ssh_exec(action, sshd.secret()), "invalid_target")
    assert "w" * 64 not in error.diagnostic()


# --- hostile servers: not the pinned one, or never answering --------------------------------


def test_an_unpinned_server_never_sees_an_authentication_attempt(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with running_paramiko_server("ed25519") as impostor:
        host = _host(impostor.port, [sshd.host_key_line])
        _fails(
            lambda: executor.ssh_exec(_action(host, ["true"], {}), sshd.secret()),
            "host_key_mismatch",
        )
        assert impostor.log.auth_attempts == [] and impostor.log.commands == []


def test_a_key_type_downgrade_is_refused_before_authentication(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    # The impostor has only an RSA key; we pin an Ed25519 key and offer only that type.
    with running_paramiko_server("rsa") as impostor:
        host = _host(impostor.port, [sshd.host_key_line])
        _fails(
            lambda: executor.ssh_exec(_action(host, ["true"], {}), sshd.secret()),
            "host_key_mismatch",
        )
        assert impostor.log.auth_attempts == []


def test_changing_the_pins_never_reuses_a_connection_checked_against_the_old_ones(
    executor: PreparingExecutor, sshd: Sshd
) -> None:
    with running_paramiko_server("ed25519") as server:
        host = _host(server.port, [server.host_key_line])
        executor.ssh_exec(_action(host, ["true"], {}), sshd.secret())
        assert executor.pooled_ssh_connections == 1
        repinned = _host(server.port, [sshd.host_key_line])
        _fails(
            lambda: executor.ssh_exec(_action(repinned, ["true"], {}), sshd.secret()),
            "host_key_mismatch",
        )
        assert server.log.commands == [b"true"]


def test_a_host_key_changed_by_a_rekey_is_never_trusted_for_the_next_command(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with running_paramiko_server("ed25519") as server:
        host = _host(server.port, [server.host_key_line])
        executor.ssh_exec(_action(host, ["echo", "first"], {}), sshd.secret())
        server.rekey_with_a_new_host_key()  # the pooled session now holds an unpinned key
        executor.ssh_exec(_action(host, ["echo", "second"], {}), sshd.secret())
        # The second command went over a new connection, checked against the pins again
        # (this server still offers the pinned key to new connections); the re-keyed one
        # was dropped.
        assert len(server.transports) == 2
        assert server.log.commands == [b"echo first", b"echo second"]
        time.sleep(0.1)
        assert not server.transports[0].is_active()


@pytest.mark.parametrize(
    ("kind", "dest", "src"),
    [
        ("auth-agent@openssh.com", None, None),
        ("x11", None, ("127.0.0.1", 6010)),
        ("forwarded-tcpip", ("127.0.0.1", 8080), ("127.0.0.1", 1)),
        ("direct-tcpip", ("127.0.0.1", 22), ("127.0.0.1", 1)),
        ("session", None, None),
    ],
)
def test_a_server_cannot_open_any_channel_back_to_the_gateway(
    sshd: Sshd,
    executor: PreparingExecutor,
    kind: str,
    dest: tuple[str, int] | None,
    src: tuple[str, int] | None,
) -> None:
    # Agent forwarding, X11, remote port forwarding: none was requested, none is accepted.
    with running_paramiko_server("ed25519") as server:
        host = _host(server.port, [server.host_key_line])
        executor.ssh_exec(_action(host, ["true"], {}), sshd.secret())
        with pytest.raises(paramiko.ChannelException):
            server.transports[0].open_channel(kind, dest_addr=dest, src_addr=src, timeout=3)
        assert executor.ssh_exec(_action(host, ["true"], {}), sshd.secret()).exit_status == 0


def _within(seconds: float, call: Callable[[], object], failure: str) -> ActionError:
    """Given up on long before a peer that never finishes would let go (see the HTTPS twin)."""
    started = time.monotonic()
    error = _fails(call, failure)
    assert time.monotonic() - started < seconds
    return error


def test_a_pinned_server_that_never_answers_the_exec_request_times_out(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with running_paramiko_server("ed25519", stall_exec=True) as server:
        host = _host(server.port, [server.host_key_line])
        action = _action(host, ["true"], {}, timeout_s=1)
        _within(10, lambda: executor.ssh_exec(action, sshd.secret()), "timeout")


@pytest.mark.parametrize("behaviour", [trickle_banner, banner_then_silence])
def test_a_server_that_stalls_the_handshake_is_given_up_on(
    sshd: Sshd, executor: PreparingExecutor, behaviour: Callable[..., None]
) -> None:
    with running_raw_server(behaviour) as port:
        host = _host(port, [sshd.host_key_line], connect_timeout_s=1)
        _within(
            10, lambda: executor.ssh_exec(_action(host, ["true"], {}), sshd.secret()), "unreachable"
        )


# --- the key and its passphrase never show ---------------------------------------------------


def _encrypted(sshd: Sshd) -> bytes:
    key = serialization.load_ssh_private_key(sshd.client_key_pem, None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.BestAvailableEncryption(PASSPHRASE.encode()),
    )


def _key_fragments(pem: bytes) -> list[str]:
    lines = pem.decode().splitlines()[1:-1]
    return [line for line in lines if len(line) > 20]


def test_a_passphrase_protected_key_works_and_neither_shows_in_debug_logs(
    sshd: Sshd, executor: PreparingExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pem = _encrypted(sshd)
    secret = SshKeySecret(SecretBytes(pem), SecretBytes(PASSPHRASE.encode()))
    result = executor.ssh_exec(_action(_real(sshd), ["echo", "ok"], {}), secret)
    assert result.stdout == "ok\n"
    assert caplog.records
    assert PASSPHRASE not in caplog.text
    assert not any(fragment in caplog.text for fragment in _key_fragments(pem))
    assert PASSPHRASE not in repr(secret) + repr(executor)


@pytest.mark.parametrize("passphrase", [None, b"wrong-" + PASSPHRASE.encode()])
def test_a_missing_or_wrong_passphrase_is_refused_without_showing_either(
    sshd: Sshd,
    executor: PreparingExecutor,
    caplog: pytest.LogCaptureFixture,
    passphrase: bytes | None,
) -> None:
    caplog.set_level(logging.DEBUG)
    pem = _encrypted(sshd)
    secret = SshKeySecret(
        SecretBytes(pem), SecretBytes(passphrase) if passphrase is not None else None
    )
    error = _fails(
        lambda: executor.ssh_exec(_action(_real(sshd), ["true"], {}), secret), "auth_failed"
    )
    said = _everything_said(error) + caplog.text
    assert PASSPHRASE not in said
    assert not any(fragment in said for fragment in _key_fragments(pem))


def test_an_unencrypted_key_given_a_passphrase_still_never_shows_it(
    sshd: Sshd, executor: PreparingExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = SshKeySecret(SecretBytes(sshd.client_key_pem), SecretBytes(PASSPHRASE.encode()))
    try:
        result = executor.ssh_exec(_action(_real(sshd), ["true"], {}), secret)
        assert result.exit_status == 0
    except ActionError as error:
        assert PASSPHRASE not in _everything_said(error)
    assert PASSPHRASE not in caplog.text
    assert not any(f in caplog.text for f in _key_fragments(sshd.client_key_pem))
