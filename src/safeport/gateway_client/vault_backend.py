"""The vault over control.sock: while a gateway runs it holds the unlocked state, so ask it.

Implements the vault commands' :class:`~safeport.vault.backend.VaultBackend` over control.sock.
Unlock, lock and entry changes go to the gateway, which holds the unlocked copy and saves the
file (the passphrase and any value only after `sp` has checked who listens); status combines
the file's header with the gateway's state. Changing the passphrase or keyring unlock while a
gateway runs is refused with what to do, so the file and the gateway's copy never fork.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from safeport.errors import EnvironmentProblem, UsageError
from safeport.gateway_client.control_socket import GatewayClient, call_for_everyone
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.operations import ControlOp
from safeport.shared.schemas.results_vault import (
    EntryRemovedResult,
    VaultDescribeResult,
    VaultKeyringUnlockedResult,
    VaultUnlockedResult,
)
from safeport.vault import (
    Authority,
    FileVaultBackend,
    KdfParams,
    UnlockReport,
    VaultFile,
    VaultStatus,
)
from safeport.vault.interface import EntryInfo, VaultPublicKeys
from safeport.vault.secrets import SecretBytes, SecretKind


class GatewayVaultBackend:
    def __init__(self, paths: SafeportPaths) -> None:
        self.paths = paths

    def status(self) -> VaultStatus:
        with GatewayClient(self.paths) as client:
            state = client.call(ops.STATUS)
            described = client.call(ops.VAULT_DESCRIBE) if self.paths.dedicated else None
        holder = f"the gateway (pid {state.pid}), {state.vault}"
        unlocked = state.vault == "unlocked"
        if described is None:
            on_disk = FileVaultBackend(VaultFile.at(self.paths)).status()
            return replace(on_disk, holder=holder, unlocked=unlocked and on_disk.exists)
        install = self.paths.install
        assert install is not None
        found = _described(described, f"{holder}, as {install.account}")
        return replace(found, unlocked=unlocked and found.exists)

    def init(self, passphrase: SecretBytes) -> VaultPublicKeys:
        if not self.paths.dedicated:
            self._refuse("create a vault")
        with GatewayClient(self.paths) as client:
            created = client.call_with_passphrase(ops.VAULT_INIT, passphrase)
        try:
            return VaultPublicKeys(
                audit_x25519=base64.b64decode(created.audit_x25519, validate=True),
                checkpoint_ed25519=base64.b64decode(created.checkpoint_ed25519, validate=True),
            )
        except ValueError as exc:
            raise EnvironmentProblem("the gateway's answer to vault.init was malformed") from exc

    def unlock(self, authority: Authority, *, rewrite_public_file: bool = False) -> UnlockReport:
        result: VaultUnlockedResult | VaultKeyringUnlockedResult
        with GatewayClient(self.paths) as client:
            if authority.keyring:
                result = client.call(ops.VAULT_UNLOCK_KEYRING)
            else:
                assert authority.passphrase is not None
                secret = authority.passphrase()
                try:
                    result = client.call_with_passphrase(ops.VAULT_UNLOCK, secret)
                finally:
                    secret.wipe()
        # Absent when the gateway's store cannot tell: nothing to warn about then.
        state = result.public_file or "matches"
        if state == "mismatch" and rewrite_public_file:
            self._refuse("rewrite vault.pub.json")
        return UnlockReport(held_by_gateway=True, public_file=state, public_file_rewritten=False)

    def lock(self, passphrase: Callable[[], SecretBytes] | None = None) -> bool:
        """Lock the gateway's vault; with several humans installed the passphrase is asked for
        (locking stops every human's work)."""
        with GatewayClient(self.paths) as client:
            return call_for_everyone(client, ops.VAULT_LOCK, passphrase or _no_passphrase).changed

    def entries(self, authority: Authority) -> list[EntryInfo]:
        with GatewayClient(self.paths) as client:
            listed = client.call(ops.VAULT_ENTRIES).entries
        return [EntryInfo.from_json(item.model_dump()) for item in listed]

    def add(
        self,
        authority: Authority,
        name: str,
        kind: SecretKind,
        value: Mapping[str, SecretBytes | str],
    ) -> None:
        self._with_passphrase(authority, ops.VAULT_ADD, name=name, kind=kind, value=_wire(value))

    def remove(self, authority: Authority, name: str) -> str | None:
        removed = self._with_passphrase(authority, ops.VAULT_REMOVE, name=name)
        assert isinstance(removed, EntryRemovedResult)
        return removed.revoke_problem

    def rotate(
        self, authority: Authority, name: str, value: Mapping[str, SecretBytes | str]
    ) -> None:
        self._with_passphrase(authority, ops.VAULT_ROTATE, name=name, value=_wire(value))

    def _with_passphrase(
        self, authority: Authority, op: ControlOp[Any, Any], **params: Any
    ) -> object:
        """Entry changes go to the gateway's unlocked copy, with the passphrase proven."""
        if authority.passphrase is None:
            self._refuse("change entries without the passphrase")
        with GatewayClient(self.paths) as client:
            secret = authority.passphrase()
            try:
                return client.call_with_passphrase(op, secret, **params)
            finally:
                secret.wipe()

    def change_passphrase(self, old: SecretBytes, new: SecretBytes) -> bool:
        self._refuse("change the passphrase")

    def backup(self, destination: Path) -> None:
        if self.paths.dedicated:
            self._refuse_dedicated("copy the vault file", "sudo cp --preserve=mode")
        FileVaultBackend(VaultFile.at(self.paths)).backup(destination)

    def keyring_enable(self, authority: Authority) -> None:
        self._refuse("change keyring unlock")

    def keyring_disable(self, authority: Authority) -> None:
        self._refuse("change keyring unlock")

    def unseal(self, authority: Authority, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.paths.dedicated:
            self._refuse_dedicated("open sealed journal bodies", "sudo -u ACCOUNT sp audit show")
        return FileVaultBackend(VaultFile.at(self.paths)).unseal(authority, records)

    def _refuse_dedicated(self, what: str, how: str) -> NoReturn:
        install = self.paths.install
        assert install is not None
        raise EnvironmentProblem(
            f"the vault file belongs to the gateway account {install.account}, so `sp` cannot "
            f"{what} as you",
            hint=f"an administrator can: `{how.replace('ACCOUNT', install.account)}` "
            f"(the file is {install.state_dir / 'vault.sp'})",
        )

    def _refuse(self, what: str) -> NoReturn:
        if self.paths.dedicated:
            self._refuse_dedicated(what, "sudo -u ACCOUNT sp vault …")
        raise EnvironmentProblem(
            f"a gateway is running; stop it to {what}",
            hint="run `sp gateway stop`, the vault command, then `sp gateway run` again",
        )


def _no_passphrase() -> SecretBytes:
    raise UsageError("with several humans installed, locking the vault needs the passphrase")


def _described(data: VaultDescribeResult, holder: str) -> VaultStatus:
    """`sp vault status` from the gateway's reading of its own file (dedicated mode)."""
    kdf = data.kdf
    return VaultStatus(
        path=Path(data.path),
        exists=data.exists,
        holder=holder,
        format_version=data.format_version,
        kdf=None
        if kdf is None
        else KdfParams(memory_kib=kdf.memory_kib, iterations=kdf.iterations, lanes=kdf.lanes),
        entries=data.entries,
        keyring_enabled=data.keyring_enabled,
        audit_key_fingerprint=data.audit_key_fingerprint,
        checkpoint_key_fingerprint=data.checkpoint_key_fingerprint,
        public_file=data.public_file,
    )


def _wire(value: Mapping[str, SecretBytes | str]) -> dict[str, dict[str, str]]:
    """Secret fields travel base64-encoded (only after the listener check), text as is."""
    out: dict[str, dict[str, str]] = {}
    for field, item in value.items():
        if isinstance(item, SecretBytes):
            out[field] = {"secret_b64": base64.b64encode(item.reveal()).decode("ascii")}
        else:
            out[field] = {"text": item}
    return out
