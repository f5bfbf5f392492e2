"""The value and the proof of authority `sp vault add` and `sp vault rotate` take: every
question named before the first is asked, the passphrase asked once and again only when a
person typed it wrong, and everything secret wiped after."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from safeport.cli.credentials.credential_input import read_value, wipe_value
from safeport.cli.options import refuse_unanswerable
from safeport.cli.secret_input import ask_secret, one_stdin
from safeport.errors import Error, UsageError
from safeport.gateway_client.control_socket import GatewayRefused
from safeport.gateway_client.vault_route import vault_backend_for
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert
from safeport.vault import Authority, CannotUnlock, VaultBackend
from safeport.vault.secrets import SecretBytes, SecretKind

FLAG_FOR_IT = "--passphrase-file FILE (- reads stdin)"  # what answers the vault passphrase


@contextlib.contextmanager
def new_value(
    kind: SecretKind | None,
    value_file: Path | None,
    username: str | None,
    key_passphrase_file: Path | None,
    ask_key_passphrase: bool,
    passphrase_file: Path | None,
    *,
    name: str | None = None,
) -> Iterator[tuple[VaultBackend, RetriedPassphrase, dict[str, SecretBytes | str]]]:
    """The backend, the proof of authority and the new value for add/rotate; wiped after."""
    one_stdin(value_file, key_passphrase_file, passphrase_file)
    # Every question named at once, before the first is asked (an SSH key comes only from a
    # file, which read_value says on its own).
    asks = [] if passphrase_file is not None else [("the vault passphrase", FLAG_FOR_IT)]
    if value_file is None and kind != "ssh-key":
        what = {"token": "the token", "basic": "the password"}.get(kind or "", "the new value")
        asks.append((what, "--value-file FILE"))
    if ask_key_passphrase and key_passphrase_file is None:
        asks.append(("the SSH key's passphrase", "--key-passphrase-file FILE"))
    refuse_unanswerable(asks)
    backend = vault_backend_for(locate())
    # The passphrase first: a value typed before a wrong passphrase would be lost with it.
    passphrase = RetriedPassphrase(passphrase_file)
    try:
        if kind is None:  # rotate: the entry already says what it is
            kind = _kind_of(backend, passphrase, str(name))
        value = read_value(kind, value_file, username, key_passphrase_file, ask_key_passphrase)
        try:
            yield backend, passphrase, value
        finally:
            wipe_value(value)
    finally:
        passphrase.wipe()


def _kind_of(backend: VaultBackend, passphrase: RetriedPassphrase, name: str) -> SecretKind:
    found: list[SecretKind] = []
    passphrase.run(
        lambda authority: found.extend(
            entry.kind for entry in backend.entries(authority) if entry.name == name
        )
    )
    if not found:
        raise UsageError(
            f"the vault has no entry named {inert(name)!r}", hint="see `sp vault list`"
        )
    if found[0] == "oauth":
        # Its tokens come from the provider, never from a paste.
        raise UsageError(
            f"{inert(name)!r} is an OAuth grant",
            hint=f"reconnect it: `sp oauth connect {inert(name)}`",
        )
    return found[0]


class RetriedPassphrase:
    """The vault passphrase asked once, up front; at a prompt, a wrong one is asked again
    (up to three times) and the operation retried, so the value already typed is kept."""

    def __init__(self, passphrase_file: Path | None) -> None:
        self.file = passphrase_file
        self.attempts_left = 2
        self.secret = self._ask()

    def _ask(self) -> SecretBytes:
        return ask_secret(self.file, what="vault passphrase", option="--passphrase-file")

    def run(self, operation: Callable[[Authority], None]) -> None:
        while True:
            try:
                operation(Authority(passphrase=self.secret.copy))
                return
            except Error as exc:
                if not self.retry(exc):
                    raise

    def retry(self, error: Exception) -> bool:
        """After a refusal: ask again when it was the passphrase and a person is typing."""
        if self.file is not None or not _is_wrong_passphrase(error) or self.attempts_left == 0:
            return False
        self.attempts_left -= 1
        click.echo("sp: wrong passphrase; try again", err=True)
        self.secret.wipe()
        self.secret = self._ask()
        return True

    def wipe(self) -> None:
        self.secret.wipe()


def _is_wrong_passphrase(error: Exception) -> bool:
    if isinstance(error, CannotUnlock):
        return True
    return isinstance(error, GatewayRefused) and "passphrase" in error.diagnostic()
