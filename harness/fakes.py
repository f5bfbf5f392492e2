"""In-memory stand-ins for the vault and the executors, with a record of every touch.

They implement the same Protocols as the real parts (``safeport.vault.interface``,
``safeport.action_gateway.executors.interface``). Every call that matters is appended as one
line to a record file, so a test in another process can prove what was (not) touched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from safeport.action_gateway.executors.interface import (
    ActionError,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.errors import Denied, EnvironmentProblem
from safeport.shared.schemas.config import GatewayPolicy, policy_digest
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult
from safeport.vault.checkpoints import VaultCheckpointSigner
from safeport.vault.errors import VaultLocked
from safeport.vault.interface import (
    AcceptedPolicy,
    EntryInfo,
    VaultEvidence,
    VaultPublicKeys,
)
from safeport.vault.secrets import (
    BasicSecret,
    CredentialSecret,
    SecretBytes,
    SecretKind,
    SshKeySecret,
    TokenSecret,
)

CANARY = "CANARY-SECRET-7f3a9c"


class Recorder:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, event: str, **details: object) -> None:
        if self.path is None:
            return  # a benchmark's stub: nothing kept, nothing written
        line = json.dumps({"event": event, **details}, sort_keys=True)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def read_record(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


class WrongPassphrase(Denied):
    def __init__(self) -> None:
        super().__init__("the passphrase is not the vault's")


class FakeVaultStore:
    """A vault in memory: one passphrase, token/ssh-key entries holding the canary."""

    def __init__(self, passphrase: bytes, record: Recorder, ssh_key: bytes | None = None) -> None:
        self.path = Path("/nonexistent/vault.sp")
        # A real private key for ssh-key entries when the harness drives a real sshd.
        self.ssh_key = ssh_key
        self._passphrase = passphrase
        self._record = record
        self._accepted: AcceptedPolicy | None = None
        # Derived from the passphrase, so a restarted harness gateway checks the checkpoints
        # the previous one signed, as a real vault's keys would.
        seed = hashlib.sha256(b"fake vault keys\0" + passphrase).digest()
        self._checkpoint_key = Ed25519PrivateKey.from_private_bytes(seed)
        self._audit_key = X25519PrivateKey.from_private_bytes(hashlib.sha256(seed).digest())
        self.evidence: VaultEvidence | None = None
        self.approver_keys: str | None = None
        self._secrets: dict[str, CredentialSecret] = {}
        self.generation = 1
        # Token entries whose value is a file's content, read at each use (an AppRole's
        # secret id a test replaces with a wrong or expired one).
        self.token_files: dict[str, Path] = {}

    def hold_accepted(self, text: str) -> None:
        """Start as a vault that accepted ``text`` in an earlier run (a restart's view)."""
        self._accepted = AcceptedPolicy(text, policy_digest(text), datetime.now(UTC))

    def unlock(self, passphrase: SecretBytes) -> FakeUnlockedVault:
        self._record("vault.unlock")
        if not hmac.compare_digest(passphrase.reveal(), self._passphrase):
            raise WrongPassphrase()
        return FakeUnlockedVault(self)

    def unlock_with_keyring(self) -> FakeUnlockedVault:
        raise WrongPassphrase()

    def create(self, passphrase: SecretBytes) -> FakeUnlockedVault:
        # This vault exists from the start, like a real one after `sp vault init`.
        raise EnvironmentProblem(f"a vault already exists at {self.path}", hint="nothing changed")

    def public_keys(self) -> VaultPublicKeys:
        return VaultPublicKeys(
            audit_x25519=self._audit_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw),
            checkpoint_ed25519=self._checkpoint_key.public_key().public_bytes(
                Encoding.Raw, PublicFormat.Raw
            ),
        )


HELD_CREDENTIALS: tuple[tuple[str, SecretKind], ...] = (
    ("build-key", "ssh-key"),
    ("session-key", "ssh-key"),
    ("limited-key", "ssh-key"),
    ("deploy-token", "token"),
)


class FakeUnlockedVault:
    def __init__(self, store: FakeVaultStore) -> None:
        self._store = store
        self._open = True
        self._locked = threading.Event()

    @property
    def generation(self) -> int:
        return self._store.generation

    def _check(self) -> None:
        if not self._open:
            raise VaultLocked()  # as the real vault object does once locked

    def entries(self) -> list[EntryInfo]:
        # The credentials support.POLICY names, with the kinds secret() answers for them, so
        # `sp policy check` against the harness sees a vault that holds what it serves.
        created = datetime(2026, 1, 1, tzinfo=UTC)
        added: list[tuple[str, SecretKind]] = [(name, "token") for name in self._store._secrets]
        return [
            EntryInfo(name=name, kind=kind, created=created, rotated=None)
            for name, kind in (*HELD_CREDENTIALS, *added)
        ]

    def public_keys(self) -> VaultPublicKeys:
        return self._store.public_keys()

    def secret(self, name: str) -> CredentialSecret:
        if name.startswith("race"):
            # The lock race: this secret is read only after the vault was locked meanwhile
            # (the test locks it once the record shows the wait), so the check below fails.
            self._store._record("vault.secret_waiting", name=name)
            self._locked.wait(10)
        self._check()
        self._store._record("vault.secret", name=name)
        if name in self._store._secrets:
            return self._store._secrets[name]
        if name in self._store.token_files:
            return TokenSecret(
                token=SecretBytes(self._store.token_files[name].read_bytes().strip())
            )
        if name.endswith("key"):
            return SshKeySecret(private_key=SecretBytes(self._store.ssh_key or CANARY.encode()))
        if name.endswith("basic"):
            return BasicSecret(username="u", password=SecretBytes(CANARY.encode()))
        return TokenSecret(token=SecretBytes(CANARY.encode()))

    def add(self, name: str, kind: SecretKind, value: Mapping[str, SecretBytes | str]) -> None:
        # Token entries only (the gateway adds its OAuth signing key as one on first use).
        self._check()
        token = value.get("token")
        if kind != "token" or not isinstance(token, SecretBytes) or name in self._store._secrets:
            raise NotImplementedError
        self._store._secrets[name] = TokenSecret(token=token.copy())
        self._store.generation += 1

    def remove(self, name: str) -> None:
        raise NotImplementedError

    def rotate(self, name: str, value: Mapping[str, SecretBytes | str]) -> None:
        raise NotImplementedError

    def verify_passphrase(self, passphrase: SecretBytes) -> None:
        self._check()
        if not hmac.compare_digest(passphrase.reveal(), self._store._passphrase):
            raise WrongPassphrase()

    def change_passphrase(self, old: SecretBytes, new: SecretBytes) -> None:
        raise NotImplementedError

    def accepted_policy(self) -> AcceptedPolicy | None:
        self._check()
        return self._store._accepted

    def accept_policy(self, text: str) -> AcceptedPolicy:
        self._check()
        self._store._accepted = AcceptedPolicy(text, policy_digest(text), datetime.now(UTC))
        return self._store._accepted

    def checkpoint_signer(self) -> VaultCheckpointSigner:
        # The real signer: a restarted gateway checks these signatures like a real vault's.
        self._check()
        raw = self._store._checkpoint_key.private_bytes_raw()
        return VaultCheckpointSigner(SecretBytes(raw), self._store.public_keys())

    def evidence(self) -> VaultEvidence | None:
        self._check()
        return self._store.evidence

    def record_evidence(self, evidence: VaultEvidence) -> None:
        self._check()
        self._store.evidence = evidence

    def approver_keys(self) -> str | None:
        self._check()
        return self._store.approver_keys

    def record_approver_keys(self, text: str) -> None:
        # Held for the process's life, like the accepted policy above.
        self._check()
        self._store.approver_keys = text

    def lock(self) -> None:
        self._store._record("vault.lock")
        self._open = False
        self._locked.set()


class RecordingExecutor:
    """Returns at once; records each call. A command named ``fail_*`` fails upstream, one named
    ``hang*`` never returns."""

    def __init__(self, record: Recorder) -> None:
        self._record = record

    def check_before_card(self, action: SshAction | HttpAction | SqlAction) -> None:
        return None  # nothing here resolves or connects

    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult:
        self._record(
            "executor.ssh",
            host=action.host_id,
            command=action.command_id,
            command_line=action.command_line,
        )
        if action.command_id.startswith("slow"):
            time.sleep(1.0)
        if action.command_id.startswith("hang"):
            threading.Event().wait()  # until the gateway is killed: an intent with no outcome
        if action.command_id.startswith("fail"):
            raise ActionError("unreachable", "the host did not answer")
        return SshExecResult(
            exit_status=0,
            stdout="active (running)\n",
            stderr="",
            stdout_truncated=False,
            stderr_truncated=False,
            duration_ms=0,
        )

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
        self._record(
            "executor.http",
            service=action.service_id,
            operation=action.operation_id,
            url=action.target.url,
            body=(action.target.body or b"").decode("utf-8"),
        )
        return HttpResult(status=200, fields={"state": "ok", "secret_header": "dropped"})

    def sql_query(
        self, action: SqlAction, secret: TokenSecret | SshKeySecret | BasicSecret
    ) -> SqlResult:
        self._record("executor.sql", database=action.database_id, query=action.query_id)
        return SqlResult(
            columns=["state"], rows=[["ok"]], row_count=1, truncated=False, duration_ms=0
        )

    def inspect_roles(
        self, policy: GatewayPolicy, secret_of: Callable[[str], object]
    ) -> tuple[list[str], list[str]]:
        return [], []  # no database here to inspect

    def close_all(self) -> None:
        self._record("executor.close_all")
