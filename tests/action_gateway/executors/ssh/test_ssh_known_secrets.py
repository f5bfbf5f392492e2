"""A command that prints the gateway's own SSH key, in any dump format, against a real sshd.

The key is copied where the remote command can read it (a host that holds a copy of the key it
is reached with, or a command that finds one); the output is withheld whole by the ladder's
filter step, whatever the dump (``xxd``, ``xxd -p``, ``od``, base64), while ordinary output
of the same size passes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_sshd import Sshd
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.ladder.credential_texts import credential_texts, result_needles
from safeport.action_gateway.ladder.result_filters import withhold_credential
from safeport.vault.secrets import BasicSecret, SecretBytes
from tests.action_gateway.executors.planned import PreparingExecutor
from tests.action_gateway.executors.ssh.test_ssh_executor import _action, _host

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.ssh"

pytestmark = pytest.mark.integration


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor())
    yield executor
    executor.close_all()


@pytest.mark.parametrize(
    "dump",
    [
        "xxd {key}",
        "xxd -p {key}",
        "xxd -u -c 24 -g 3 {key}",
        "od -An -tx1 {key}",
        "base64 -w 0 {key}",
        "tail -c +40 {key} | base64",  # the encoding starts at another offset
        "cat {key}",
        "cat {key} >&2",
        # Fewer than 16 bytes a line: each line alone holds no 16-byte run, the lines joined do.
        "xxd -c 8 {key}",
        "xxd -c 7 {key}",
        "hexdump {key}",  # 16-bit words, low byte first
        "od -x {key}",
        "hexdump -C {key}",
        "od -b {key}",  # octal bytes
        "xxd -i {key}",  # a C array: 0x2d, 0x2d, ...
        "iconv -f ascii -t UTF-16LE {key}",  # a NUL after every character
        "iconv -f ascii -t UTF-16BE {key} | xxd -p",
        # The body decoded: the key's own bytes, dumped or encoded again from another offset.
        "grep -v -- ----- {key} | base64 -d | xxd",
        "grep -v -- ----- {key} | base64 -d | od -An -tx1",
        "grep -v -- ----- {key} | base64 -d | tail -c +60 | base64",
    ],
)
def test_output_that_dumps_the_key_it_was_run_with_is_withheld(
    sshd: Sshd, executor: PreparingExecutor, dump: str
) -> None:
    copy = sshd.shared_dir / "copied_key"
    copy.write_bytes(sshd.client_key_pem)
    copy.chmod(0o644)
    try:
        action = _action(_host(sshd), ["sh", "-c", dump.format(key=copy)])
        result = executor.ssh_exec(action, sshd.secret())
        with pytest.raises(ActionError) as caught:
            withhold_credential(result, *result_needles(sshd.secret()))
        assert caught.value.failure == "bad_response"
    finally:
        copy.unlink()


def test_dumps_of_other_files_and_the_key_format_name_pass(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    other = sshd.shared_dir / "other_file"
    other.write_bytes(bytes(range(256)) * 4)
    other.chmod(0o644)
    try:
        script = (
            f"xxd {other}; base64 {other}; xxd -c 7 {other}; hexdump {other}; od -b {other};"
            f" xxd -i {other};"
            " echo '-----BEGIN OPENSSH PRIVATE KEY----- is the format of the key'"
        )
        result = executor.ssh_exec(_action(_host(sshd), ["sh", "-c", script]), sshd.secret())
        assert result.exit_status == 0 and len(result.stdout) > 4000
        withhold_credential(result, *result_needles(sshd.secret()))
    finally:
        other.unlink()


@pytest.mark.parametrize("offset", [0, 1, 5, 11, 15])
@pytest.mark.parametrize(
    "dump",
    ["xxd {f}", "hexdump -C {f}", "od -An -tx1 {f}", "od -tx1 {f}", "hexdump {f}", "od -c {f}"],
)
def test_a_short_password_dumped_from_any_offset_of_a_file_is_withheld(
    sshd: Sshd, executor: PreparingExecutor, dump: str, offset: int
) -> None:
    """A 20-byte password (the filter is given it as the action's credential) that does not
    start a dump's line is split over two lines, neither holding 16 bytes of it."""
    secret = BasicSecret(username="app", password=SecretBytes(CANARY.encode()))
    config = sshd.shared_dir / "app_config"
    config.write_bytes(b"p\t" * offset + CANARY.encode() + b"\nport = 5432\n")
    config.chmod(0o644)
    try:
        action = _action(_host(sshd), ["sh", "-c", dump.format(f=config)])
        result = executor.ssh_exec(action, sshd.secret())
        assert result.exit_status == 0
        with pytest.raises(ActionError) as caught:
            withhold_credential(result, credential_texts(secret))
        assert caught.value.failure == "bad_response"
    finally:
        config.unlink()


def test_the_keys_public_half_passes_in_any_dump(sshd: Sshd, executor: PreparingExecutor) -> None:
    """The public key is in every authorized_keys the gateway logs in with: printing it, or
    dumping its decoded bytes, is not the credential."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_ssh_private_key(sshd.client_key_pem, None)
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    public = sshd.shared_dir / "authorized_copy"
    public.write_bytes(line + b" gateway\n")
    public.chmod(0o644)
    try:
        script = f"cat {public}; cut -d' ' -f2 {public} | base64 -d | xxd"
        result = executor.ssh_exec(_action(_host(sshd), ["sh", "-c", script]), sshd.secret())
        assert result.exit_status == 0 and "ssh-ed25519" in result.stdout
        withhold_credential(result, *result_needles(sshd.secret()))
    finally:
        public.unlink()
