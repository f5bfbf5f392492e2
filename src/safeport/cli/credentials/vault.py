"""`sp vault`: the encrypted credential store (init, unlock, entries, passphrase, keyring)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Literal, get_args

import click

from safeport.cli.credentials.credential_input import value_options
from safeport.cli.credentials.vault_values import FLAG_FOR_IT, new_value
from safeport.cli.options import (
    passphrase_file_option,
    refuse_unanswerable,
    several_humans_passphrase_option,
)
from safeport.cli.replies import VaultLockReply, VaultUnlockReply, echo_json
from safeport.cli.secret_input import ask_secret, one_stdin, vault_passphrase
from safeport.errors import EnvironmentProblem, UsageError
from safeport.gateway_client.vault_backend import GatewayVaultBackend
from safeport.gateway_client.vault_route import vault_backend_for
from safeport.shared.paths import locate
from safeport.shared.visible_text import inert
from safeport.vault import (
    Authority,
    VaultStatus,
    trade_off,
    weakness,
)
from safeport.vault.secrets import SecretBytes, SecretKind

# An oauth entry is written by the gateway itself at `sp oauth connect`, never pasted.
_KINDS = [kind for kind in get_args(SecretKind) if kind != "oauth"]
# The exit code of a vault that is locked, missing or has no gateway to hold it unlocked.
LOCKED_EXIT = 2


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
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def unlock(
    passphrase_file: Path | None, use_keyring: bool, rewrite_public_keys: bool, as_json: bool
) -> None:
    """Unlock the vault for the gateway (checks the passphrase and vault.pub.json)."""
    paths = locate()
    backend = vault_backend_for(paths)
    report = backend.unlock(
        _authority(passphrase_file, use_keyring), rewrite_public_file=rewrite_public_keys
    )
    if report.public_file == "mismatch" and not report.public_file_rewritten:
        raise EnvironmentProblem(
            f"{paths.vault_public_file} does not hold this vault's public keys (it was replaced)",
            hint="records sealed to it are unreadable to you; rerun with --rewrite-public-keys",
        )
    code = 0 if report.held_by_gateway else LOCKED_EXIT
    if as_json:
        state: Literal["unlocked", "locked"] = "unlocked" if report.held_by_gateway else "locked"
        echo_json(
            VaultUnlockReply(state, report.held_by_gateway, report.public_file_rewritten, code)
        )
        if code:
            raise click.exceptions.Exit(code)
        return
    if report.public_file_rewritten:
        click.echo(f"{paths.vault_public_file} rewritten from the keys inside the vault")
    if report.held_by_gateway:
        click.echo("vault unlocked in the gateway")
        return
    click.echo(
        "passphrase accepted; no gateway is running to hold the unlocked state, so the vault "
        "stays locked at rest (start one with `sp gateway run`)"
    )
    # What was asked for (an unlocked vault) does not hold: a script must not carry on as if it
    # did. 2 is "locked or down", as in `sp status` and `sp vault status`.
    raise click.exceptions.Exit(LOCKED_EXIT)


@vault.command()
@several_humans_passphrase_option
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def lock(passphrase_file: Path | None, as_json: bool) -> None:
    """Lock the vault in the gateway (zero its keys in memory)."""
    backend = vault_backend_for(locate())
    locked = (
        backend.lock(vault_passphrase(passphrase_file))
        if isinstance(backend, GatewayVaultBackend)
        else backend.lock()
    )
    if as_json:  # locked either way: in the gateway now, or at rest with none running
        echo_json(VaultLockReply(locked=True, held_by_gateway=locked))
        return
    if locked:
        click.echo("vault locked")
    else:
        click.echo("no gateway is running; the vault is locked at rest")


@vault.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status(as_json: bool) -> None:
    """The vault's state, entry count, keyring state and key fingerprints (no passphrase)."""
    report = vault_backend_for(locate()).status()
    _show_status(report, as_json)
    if not report.unlocked:
        raise click.exceptions.Exit(LOCKED_EXIT)


def _show_status(report: VaultStatus, as_json: bool) -> None:
    if as_json:
        answer = {**report.as_json(), "unlocked": report.unlocked}
        click.echo(json.dumps(answer, indent=2, sort_keys=True))
        return
    click.echo(f"vault: {report.path}")
    if not report.exists:
        click.echo("state: missing (create it with `sp vault init`)")
        return
    click.echo(f"state: {'unlocked' if report.unlocked else 'locked'}")
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
        scopes = "" if e.scopes is None else f"  scopes {inert(' '.join(e.scopes)) or '(none)'}"
        click.echo(f"{inert(e.name)}  {e.kind}  created {_day(e.created)}{rotated}{scopes}")


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
    with new_value(kind, value_file, username, key_passphrase_file, ask_key_passphrase,
                    passphrase_file) as (backend, passphrase, value):  # fmt: skip
        passphrase.run(lambda authority: backend.add(authority, name, kind, value))
    click.echo(f"added {inert(name)} ({kind})")


@vault.command()
@click.argument("name")
@passphrase_file_option
def remove(name: str, passphrase_file: Path | None) -> None:
    """Remove the credential NAME (an OAuth grant is revoked at its provider first)."""
    problem = vault_backend_for(locate()).remove(_authority(passphrase_file), name)
    click.echo(f"removed {inert(name)}")
    if problem:
        click.echo(inert(f"warning: {problem}; revoke it in the provider's settings"), err=True)


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
    with new_value(kind, value_file, username, key_passphrase_file, ask_key_passphrase,
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
    asks = [] if passphrase_file is not None else [("the current passphrase", FLAG_FOR_IT)]
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
