"""`sp vault`: the encrypted credential store (init, unlock, entries, passphrase, keyring)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import get_args

import click

from safeport.cli.credential_input import read_value, value_options, wipe_value
from safeport.cli.options import (
    passphrase_file_option,
    refuse_unanswerable,
    several_humans_passphrase_option,
)
from safeport.cli.secret_input import ask_secret, one_stdin, vault_passphrase
from safeport.errors import EnvironmentProblem, Error, UsageError
from safeport.gateway_client.control_socket import GatewayRefused
from safeport.gateway_client.vault_backend import GatewayVaultBackend
from safeport.gateway_client.vault_route import vault_backend_for
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert
from safeport.vault import Authority, CannotUnlock, VaultBackend, trade_off, weakness
from safeport.vault.secrets import SecretBytes, SecretKind

_KINDS = list(get_args(SecretKind))
_FLAG_FOR_IT = "--passphrase-file FILE (- reads stdin)"  # what answers the vault passphrase


def _authority(passphrase_file: Path | None, use_keyring: bool = False) -> Authority:
    if use_keyring:
        if passphrase_file is not None:
            raise UsageError("give either --keyring or --passphrase-file, not both")
        return Authority(keyring=True)
    return Authority(
        passphrase=lambda: ask_secret(
            passphrase_file, what="vault passphrase", option="--passphrase-file"
        )
    )


@click.group()
def vault() -> None:
    """The encrypted credential store the gateway unlocks."""


@vault.command()
@passphrase_file_option
def init(passphrase_file: Path | None) -> None:
    """Create the vault, its audit sealing key and its checkpoint signing key."""
    create_vault(new_passphrase(passphrase_file))


def new_passphrase(passphrase_file: Path | None) -> SecretBytes:
    """The new vault's passphrase, from the file or asked twice at a terminal."""
    return ask_secret(
        passphrase_file, what="new vault passphrase", option="--passphrase-file", confirm=True
    )


def create_vault(passphrase: SecretBytes) -> None:
    """Create the vault under ``passphrase`` (wiped here) and say where its keys are."""
    backend = vault_backend_for(locate())
    try:
        weak = weakness(passphrase)
        keys = backend.init(passphrase)  # refuses an empty one before any warning is worth giving
    finally:
        passphrase.wipe()
    if weak:
        click.echo(
            f"warning: a weak passphrase ({weak}): anyone who copies vault.sp can guess it "
            "offline; `sp vault passphrase` changes it later",
            err=True,
        )
    where = backend.status().path
    click.echo(f"vault created: {where}")
    click.echo(f"public keys: {where.with_name('vault.pub.json')}")
    click.echo(f"checkpoint key: {keys.checkpoint_fingerprint}")
    click.echo("keep a backup (`sp vault backup FILE`): a lost passphrase cannot be recovered")


@vault.command()
@passphrase_file_option
@click.option("--keyring", "use_keyring", is_flag=True, help="Unlock with the OS keyring.")
@click.option(
    "--rewrite-public-keys",
    is_flag=True,
    help="Rewrite vault.pub.json from the keys inside the vault if it differs.",
)
def unlock(passphrase_file: Path | None, use_keyring: bool, rewrite_public_keys: bool) -> None:
    """Unlock the vault for the gateway (checks the passphrase and vault.pub.json)."""
    paths = locate()
    backend = vault_backend_for(paths)
    report = backend.unlock(
        _authority(passphrase_file, use_keyring), rewrite_public_file=rewrite_public_keys
    )
    if report.public_file_rewritten:
        click.echo(f"{paths.vault_public_file} rewritten from the keys inside the vault")
    elif report.public_file == "mismatch":
        raise EnvironmentProblem(
            f"{paths.vault_public_file} does not hold this vault's public keys (it was replaced)",
            hint="records sealed to it are unreadable to you; rerun with --rewrite-public-keys",
        )
    if report.held_by_gateway:
        click.echo("vault unlocked in the gateway")
    else:
        click.echo(
            "passphrase accepted; no gateway is running to hold the unlocked state, so the vault "
            "stays locked at rest (start one with `sp gateway run`)"
        )


@vault.command()
@several_humans_passphrase_option
def lock(passphrase_file: Path | None) -> None:
    """Lock the vault in the gateway (zero its keys in memory)."""
    backend = vault_backend_for(locate())
    locked = (
        backend.lock(vault_passphrase(passphrase_file))
        if isinstance(backend, GatewayVaultBackend)
        else backend.lock()
    )
    if locked:
        click.echo("vault locked")
    else:
        click.echo("no gateway is running; the vault is locked at rest")


@vault.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status(as_json: bool) -> None:
    """The vault's state, entry count, keyring state and key fingerprints (no passphrase)."""
    report = vault_backend_for(locate()).status()
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2, sort_keys=True))
        return
    click.echo(f"vault: {report.path}")
    if not report.exists:
        click.echo("state: missing (create it with `sp vault init`)")
        return
    kdf = report.kdf
    assert kdf is not None
    click.echo(f"held by: {report.holder}")
    click.echo(
        f"format: version {report.format_version}, argon2id {kdf.memory_kib} KiB, "
        f"{kdf.iterations} passes, {kdf.lanes} lane(s)"
    )
    click.echo(f"entries: {report.entries}")
    click.echo(f"keyring unlock: {'enabled' if report.keyring_enabled else 'disabled'}")
    click.echo(f"audit key: {report.audit_key_fingerprint}")
    click.echo(f"checkpoint key: {report.checkpoint_key_fingerprint}")
    click.echo(f"public key file: {report.public_file}")


@vault.command(name="list")
@passphrase_file_option
@click.option("--keyring", "use_keyring", is_flag=True, help="Unlock with the OS keyring.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per entry.")
def list_entries(passphrase_file: Path | None, use_keyring: bool, as_json: bool) -> None:
    """The entries' names, kinds and dates (never a value)."""
    entries = vault_backend_for(locate()).entries(_authority(passphrase_file, use_keyring))
    if as_json:
        click.echo(json.dumps([e.as_json() for e in entries], indent=2))
        return
    if not entries:
        click.echo("no entries")
        return
    for e in entries:
        rotated = f", rotated {_day(e.rotated)}" if e.rotated else ""
        click.echo(f"{inert(e.name)}  {e.kind}  created {_day(e.created)}{rotated}")


@vault.command()
@click.argument("name")
@click.option("--kind", type=click.Choice(_KINDS), required=True, help="The credential's kind.")
@value_options
@passphrase_file_option
def add(
    name: str,
    kind: SecretKind,
    value_file: Path | None,
    username: str | None,
    key_passphrase_file: Path | None,
    ask_key_passphrase: bool,
    passphrase_file: Path | None,
) -> None:
    """Add a credential NAME (its value from a prompt or --value-file)."""
    with _new_value(kind, value_file, username, key_passphrase_file, ask_key_passphrase,
                    passphrase_file) as (backend, passphrase, value):  # fmt: skip
        passphrase.run(lambda authority: backend.add(authority, name, kind, value))
    click.echo(f"added {inert(name)} ({kind})")


@vault.command()
@click.argument("name")
@passphrase_file_option
def remove(name: str, passphrase_file: Path | None) -> None:
    """Remove the credential NAME."""
    vault_backend_for(locate()).remove(_authority(passphrase_file), name)
    click.echo(f"removed {inert(name)}")


@vault.command()
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice(_KINDS),
    default=None,
    help="The credential's kind (default: the kind it has; a different one is refused).",
)
@value_options
@passphrase_file_option
def rotate(
    name: str,
    kind: SecretKind | None,
    value_file: Path | None,
    username: str | None,
    key_passphrase_file: Path | None,
    ask_key_passphrase: bool,
    passphrase_file: Path | None,
) -> None:
    """Replace the value of the credential NAME (same kind).

    \b
    Examples:
      sp vault rotate deploy-token
      sp vault rotate build-key --value-file ~/.ssh/new_ed25519
    """
    with _new_value(kind, value_file, username, key_passphrase_file, ask_key_passphrase,
                    passphrase_file, name=name) as (backend, passphrase, value):  # fmt: skip
        passphrase.run(lambda authority: backend.rotate(authority, name, value))
    click.echo(f"rotated {inert(name)}")


@vault.command()
@passphrase_file_option
@click.option(
    "--new-passphrase-file",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    help="Read the new passphrase from FILE (- for stdin).",
)
def passphrase(passphrase_file: Path | None, new_passphrase_file: Path | None) -> None:
    """Change the passphrase (the vault is re-encrypted under a new data key)."""
    one_stdin(passphrase_file, new_passphrase_file)
    asks = [] if passphrase_file is not None else [("the current passphrase", _FLAG_FOR_IT)]
    if new_passphrase_file is None:
        asks.append(("the new one", "--new-passphrase-file FILE"))
    refuse_unanswerable(asks)
    backend = vault_backend_for(locate())
    old = ask_secret(passphrase_file, what="current vault passphrase", option="--passphrase-file")
    new = ask_secret(
        new_passphrase_file,
        what="new vault passphrase",
        option="--new-passphrase-file",
        confirm=True,
    )
    try:
        keyring_dropped = backend.change_passphrase(old, new)
    finally:
        old.wipe()
        new.wipe()
    click.echo("passphrase changed")
    if keyring_dropped:
        click.echo("keyring unlock was turned off; run `sp vault keyring enable` to turn it on")


@vault.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
def backup(file: Path) -> None:
    """Copy the encrypted vault to FILE (still passphrase-protected; restore by copying back)."""
    vault_backend_for(locate()).backup(file)
    click.echo(f"backup written: {file} (encrypted; the same passphrase opens it)")


@vault.group()
def keyring() -> None:
    """Optional unlock through the OS keyring (it never approves or accepts a policy)."""


@keyring.command()
@passphrase_file_option
def enable(passphrase_file: Path | None) -> None:
    """Keep a second wrap of the vault key in the OS keyring, for `sp vault unlock --keyring`."""
    vault_backend_for(locate()).keyring_enable(_authority(passphrase_file))
    click.echo("keyring unlock enabled")
    click.echo(trade_off())


@keyring.command()
@passphrase_file_option
@click.option("--keyring", "use_keyring", is_flag=True, help="Unlock with the OS keyring.")
def disable(passphrase_file: Path | None, use_keyring: bool) -> None:
    """Remove the keyring wrap from the vault and its key from the OS keyring."""
    vault_backend_for(locate()).keyring_disable(_authority(passphrase_file, use_keyring))
    click.echo("keyring unlock disabled")


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


@contextlib.contextmanager
def _new_value(
    kind: SecretKind | None,
    value_file: Path | None,
    username: str | None,
    key_passphrase_file: Path | None,
    ask_key_passphrase: bool,
    passphrase_file: Path | None,
    *,
    name: str | None = None,
) -> Iterator[tuple[VaultBackend, _RetriedPassphrase, dict[str, SecretBytes | str]]]:
    """The backend, the proof of authority and the new value for add/rotate; wiped after."""
    one_stdin(value_file, key_passphrase_file, passphrase_file)
    # Every question named at once, before the first is asked (an SSH key comes only from a
    # file, which read_value says on its own).
    asks = [] if passphrase_file is not None else [("the vault passphrase", _FLAG_FOR_IT)]
    if value_file is None and kind != "ssh-key":
        what = {"token": "the token", "basic": "the password"}.get(kind or "", "the new value")
        asks.append((what, "--value-file FILE"))
    if ask_key_passphrase and key_passphrase_file is None:
        asks.append(("the SSH key's passphrase", "--key-passphrase-file FILE"))
    refuse_unanswerable(asks)
    backend = vault_backend_for(locate())
    # The passphrase first: a value typed before a wrong passphrase would be lost with it.
    passphrase = _RetriedPassphrase(passphrase_file)
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


def _kind_of(backend: VaultBackend, passphrase: _RetriedPassphrase, name: str) -> SecretKind:
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
    return found[0]


class _RetriedPassphrase:
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
