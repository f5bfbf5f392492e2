"""The SSH executor against a real OpenSSH sshd on 127.0.0.1."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from harness.real_sshd import Sshd, free_port
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import SshCommand, SshHost
from safeport.vault.secrets import SecretBytes, SshKeySecret
from tests.action_gateway.executors.planned import PlannedSsh, PreparingExecutor
from tests.action_gateway.executors.tcp_relay import relay_to

pytestmark = pytest.mark.integration

LOOSE = {"pattern": "^.{1,200}$"}


def _host(
    sshd: Sshd, *, port: int | None = None, keys: list[str] | None = None, **extra: object
) -> SshHost:
    return SshHost.model_validate(
        {
            "address": "127.0.0.1",
            "port": port or sshd.port,
            "user": sshd.user,
            "host_keys": keys or [sshd.host_key_line],
            "credential": "build-key",
            "connect_timeout_s": 5,
            **extra,
        }
    )


def _action(
    host: SshHost, argv: list[str], args: dict[str, str | int] | None = None, **spec: object
) -> PlannedSsh:
    params = spec.pop("params", dict.fromkeys(args or {}, LOOSE))
    command = SshCommand.model_validate({"argv": argv, "params": params, **spec})
    return PlannedSsh("build", host, "cmd", command, args or {})


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor())
    yield executor
    executor.close_all()


def _marker(sshd: Sshd, name: str) -> Path:
    path = sshd.shared_dir / name
    path.unlink(missing_ok=True)
    return path


def test_a_declared_command_runs_and_returns_exit_status_and_both_streams(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    action = _action(_host(sshd), ["sh", "-c", "echo out; echo err >&2; exit 3"])
    result = executor.ssh_exec(action, sshd.secret())
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.stdout_truncated and not result.stderr_truncated
    assert not result.output_replaced
    assert result.duration_ms >= 0


def test_shell_metacharacters_in_a_permitted_value_never_execute(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    marker = _marker(sshd, "metachar")
    for value in (
        f"x; touch {marker}",
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"a\\' ; touch {marker}",
    ):
        action = _action(_host(sshd), ["printf", "%s", "{text}"], {"text": value})
        result = executor.ssh_exec(action, sshd.secret())
        assert result.stdout == value
    assert not marker.exists()


def test_proxycommand_smuggled_as_an_argument_is_refused_and_runs_nothing(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    marker = _marker(sshd, "proxycommand")
    action = _action(
        _host(sshd), ["printf", "%s", "{text}"], {"text": f"-oProxyCommand=touch {marker}"}
    )
    with pytest.raises(ActionError, match="may not start with '-'") as caught:
        executor.ssh_exec(action, sshd.secret())
    assert caught.value.failure == "invalid_target"
    assert executor.pooled_ssh_connections == 0  # refused before any connection
    assert not marker.exists()


def test_proxycommand_in_the_host_address_is_refused_before_any_connection(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    marker = _marker(sshd, "address")
    host = _host(sshd, address=f"-oProxyCommand=touch {marker}")
    with pytest.raises(ActionError, match="address that is not plain") as caught:
        executor.ssh_exec(_action(host, ["true"]), sshd.secret())
    assert caught.value.failure == "invalid_target"
    assert not marker.exists()


@pytest.mark.parametrize(
    "value",
    ["worker\n", "worker\ntouch /tmp/x", "w" * 49, "-w", "worker;id", "$(id)"],
)
def test_values_outside_the_declared_constraint_never_reach_the_server(
    sshd: Sshd, executor: PreparingExecutor, value: str
) -> None:
    action = _action(
        _host(sshd),
        ["echo", "{service}"],
        {"service": value},
        params={"service": {"pattern": "^[a-z0-9-]{1,48}$"}},
    )
    with pytest.raises(ActionError) as caught:
        executor.ssh_exec(action, sshd.secret())
    assert caught.value.failure == "invalid_target"
    assert value.strip() not in caught.value.diagnostic()
    assert executor.pooled_ssh_connections == 0


def test_output_over_the_cap_is_truncated_and_flagged(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    action = _action(
        _host(sshd),
        ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; head -c 300 /dev/zero >&2; exit 4"],
        max_output_bytes=1000,
    )
    result = executor.ssh_exec(action, sshd.secret())
    assert result.stdout == "a" * 1000 and result.stdout_truncated
    assert len(result.stderr) == 300 and not result.stderr_truncated
    assert result.exit_status == 4


def test_a_command_that_talks_far_past_the_cap_is_stopped_without_an_exit_status(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    action = _action(_host(sshd), ["yes"], max_output_bytes=1000, timeout_s=60)
    started = time.monotonic()
    result = executor.ssh_exec(action, sshd.secret())
    # Stopped at the cap, not at the action's timeout (the bound is generous for busy cores).
    assert time.monotonic() - started < 30
    assert result.stdout_truncated and result.exit_status is None
    assert len(result.stdout) == 1000


def test_invalid_utf8_is_replaced_and_flagged(sshd: Sshd, executor: PreparingExecutor) -> None:
    action = _action(_host(sshd), ["printf", "ok\\377\\376"])
    result = executor.ssh_exec(action, sshd.secret())
    assert result.stdout.startswith("ok") and "\ufffd" in result.stdout
    assert result.output_replaced


def test_a_timeout_stops_the_remote_command_and_is_its_own_error(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    marker = _marker(sshd, "after-timeout")
    action = _action(_host(sshd), ["sh", "-c", f"sleep 3; touch {marker}"], timeout_s=0.3)
    with pytest.raises(ActionError, match="did not finish in time") as caught:
        executor.ssh_exec(action, sshd.secret())
    assert caught.value.failure == "timeout"
    # Given up at the timeout, not when the command ended (it would have left the marker).
    assert not marker.exists()
    # The pooled transport stays usable for the next command.
    assert executor.ssh_exec(_action(_host(sshd), ["true"]), sshd.secret()).exit_status == 0
    time.sleep(4)
    assert not marker.exists()  # the command was killed, not merely abandoned


def test_an_unreachable_host_is_its_own_error(sshd: Sshd, executor: PreparingExecutor) -> None:
    host = _host(sshd, port=free_port())
    with pytest.raises(ActionError, match=r"unreachable \(connection refused") as caught:
        executor.ssh_exec(_action(host, ["true"]), sshd.secret())
    assert caught.value.failure == "unreachable"


def test_a_refused_key_is_its_own_error_and_never_shows_the_key(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    other = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    with pytest.raises(ActionError, match="refused the credential's key") as caught:
        executor.ssh_exec(_action(_host(sshd), ["true"]), SshKeySecret(SecretBytes(other)))
    assert caught.value.failure == "auth_failed"
    assert other.decode() not in caught.value.diagnostic()


def test_a_secret_that_is_not_a_key_is_refused_without_echoing_it(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    canary = b"CANARY-not-a-key-0123456789"
    with pytest.raises(ActionError, match="not a usable SSH private key") as caught:
        executor.ssh_exec(_action(_host(sshd), ["true"]), SshKeySecret(SecretBytes(canary)))
    assert "CANARY" not in repr(caught.value) + caught.value.diagnostic()
    # The parser's exception (which may hold the bytes) is not chained into ours.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_changed_host_key_is_refused_before_authentication(
    sshd: Sshd, executor: PreparingExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_calls: list[str] = []
    real_auth = paramiko.Transport.auth_publickey

    def spy(
        self: paramiko.Transport,
        username: str,
        key: paramiko.PKey,
        event: threading.Event | None = None,
    ) -> list[str]:
        auth_calls.append(username)
        return real_auth(self, username, key, event)

    monkeypatch.setattr(paramiko.Transport, "auth_publickey", spy)
    marker = _marker(sshd, "changed-key")
    host = _host(sshd, keys=[sshd.other_host_key_line])
    with pytest.raises(ActionError, match="not pinned") as caught:
        executor.ssh_exec(_action(host, ["touch", str(marker)]), sshd.secret())
    assert caught.value.failure == "host_key_mismatch"
    assert "before authentication" in caught.value.message
    assert auth_calls == []
    assert not marker.exists()
    assert executor.pooled_ssh_connections == 0


def test_a_pinned_key_of_another_type_than_the_server_offers_is_a_mismatch(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    rsa_pin = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7"  # a type this server has no key of
    with pytest.raises(ActionError) as caught:
        executor.ssh_exec(_action(_host(sshd, keys=[rsa_pin]), ["true"]), sshd.secret())
    assert caught.value.failure == "host_key_mismatch"
    assert "none of the pinned host key types" in caught.value.message


def test_repeated_commands_share_one_authenticated_connection(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with relay_to(sshd.port) as relay:
        host = _host(sshd, port=relay.port)
        for index in range(5):
            result = executor.ssh_exec(
                _action(host, ["echo", "{n}"], {"n": str(index)}), sshd.secret()
            )
            assert result.stdout == f"{index}\n"
        assert relay.accepted == 1
        assert executor.pooled_ssh_connections == 1
        executor.close_all()
        assert executor.pooled_ssh_connections == 0
        executor.ssh_exec(_action(host, ["true"]), sshd.secret())
        assert relay.accepted == 2


def test_a_reconnect_rechecks_the_host_key_and_an_impostor_runs_nothing(
    sshd: Sshd, impostor_sshd: Sshd, executor: PreparingExecutor
) -> None:
    marker = _marker(sshd, "impostor")
    # The impostor even accepts the gateway's key: only the host key check stands in the way.
    (impostor_sshd.workdir / "authorized_keys" / impostor_sshd.user).write_text(
        (sshd.workdir / "authorized_keys" / sshd.user).read_text()
    )
    with relay_to(sshd.port) as relay:
        host = _host(sshd, port=relay.port)
        assert executor.ssh_exec(_action(host, ["true"]), sshd.secret()).exit_status == 0
        relay.upstream_port = impostor_sshd.port
        relay.drop_all()
        time.sleep(0.2)  # let paramiko notice the cut connection
        with pytest.raises(ActionError) as caught:
            executor.ssh_exec(_action(host, ["touch", str(marker)]), sshd.secret())
        assert caught.value.failure == "host_key_mismatch"
        assert relay.accepted == 2
    assert not marker.exists()


def test_a_dead_pooled_connection_is_replaced_once_and_the_command_runs_once(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    counter = sshd.shared_dir / "runs"
    counter.unlink(missing_ok=True)
    with relay_to(sshd.port) as relay:
        host = _host(sshd, port=relay.port)
        executor.ssh_exec(_action(host, ["true"]), sshd.secret())
        relay.drop_all()
        time.sleep(0.2)
        result = executor.ssh_exec(
            _action(host, ["sh", "-c", f"echo x >> {counter}"]), sshd.secret()
        )
        assert result.exit_status == 0
    assert counter.read_text() == "x\n"


def test_no_pty_and_no_forwarded_environment(
    sshd: Sshd, executor: PreparingExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_SAFEPORT_CANARY", "CANARY-env")
    action = _action(_host(sshd), ["sh", "-c", "tty; env; echo agent=$SSH_AUTH_SOCK."])
    result = executor.ssh_exec(action, sshd.secret())
    assert "not a tty" in result.stdout
    assert "CANARY" not in result.stdout
    assert "agent=.\n" in result.stdout


def test_the_socket_is_ours_with_nodelay_and_keepalive(sshd: Sshd) -> None:
    from safeport.action_gateway.executors.ssh.transport import open_transport

    transport = open_transport("build", _host(sshd), sshd.secret())
    try:
        sock = transport.sock
        assert isinstance(sock, socket.socket)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
    finally:
        transport.close()


def test_debug_logs_of_paramiko_never_hold_the_key(
    sshd: Sshd, executor: PreparingExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    executor.ssh_exec(_action(_host(sshd), ["true"]), sshd.secret())
    with pytest.raises(ActionError):
        executor.ssh_exec(
            _action(_host(sshd, keys=[sshd.other_host_key_line]), ["true"]), sshd.secret()
        )
    body = b"".join(sshd.client_key_pem.splitlines()[1:-1]).decode()
    assert caplog.records
    assert body[:40] not in caplog.text


def test_a_connection_cut_during_a_command_is_reported_not_waited_out(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with relay_to(sshd.port) as relay:
        host = _host(sshd, port=relay.port)
        executor.ssh_exec(_action(host, ["true"]), sshd.secret())
        threading.Timer(0.3, relay.drop_all).start()
        started = time.monotonic()
        with pytest.raises(ActionError, match="dropped while the command ran") as caught:
            executor.ssh_exec(_action(host, ["sleep", "60"], timeout_s=90), sshd.secret())
        assert caught.value.failure == "unreachable"
        assert time.monotonic() - started < 30  # at the cut, not when the command would end
        # The next call reconnects (and re-checks the host key) on its own.
        assert executor.ssh_exec(_action(host, ["true"]), sshd.secret()).exit_status == 0


def test_concurrent_commands_share_the_pooled_connection(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    with relay_to(sshd.port) as relay:
        host = _host(sshd, port=relay.port)
        results: list[str] = []

        def one(index: int) -> None:
            action = _action(host, ["echo", "{n}"], {"n": str(index)})
            results.append(executor.ssh_exec(action, sshd.secret()).stdout)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(results) == sorted(f"{i}\n" for i in range(8))
        assert relay.accepted == 1


def test_a_pin_of_a_key_type_paramiko_cannot_check_is_a_config_problem(sshd: Sshd) -> None:
    import base64

    from pydantic import ValidationError

    blob = len(b"ssh-dss").to_bytes(4, "big") + b"ssh-dss" + b"\x00" * 8
    pin = "ssh-dss " + base64.b64encode(blob).decode()
    # Refused when the policy is parsed, long before any connection could be attempted.
    with pytest.raises(ValidationError, match="cannot be pinned"):
        _host(sshd, keys=[pin])
